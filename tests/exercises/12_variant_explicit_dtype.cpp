// A correct variant kept by the tests (tests/test_exercises.cpp): lab 12's amp.cpp with cast_inputs spelled
// torch::kFloat32 and the casts of MatMulAutocast's arguments through fwd.cast (a no-op without cast_inputs).
//
// expect: pass
#include "amp.h"

#include "amp/custom_function.h"

namespace lab12 {

torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  // custom_fwd(cast_inputs=torch.float32): autocast is off until forward returns.
  amp::CustomFwd fwd(ctx, h.device().type(), /*cast_inputs=*/torch::kFloat32);
  h = fwd.cast(h);  // fp32 when autocast was on, so the sum of squares stays in range
  const auto n = (h * h).sum(/*dim=*/1).sqrt();
  ctx->save_for_backward({h, n});
  return n;
}

variable_list RowNormFp32::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  amp::CustomBwd bwd(ctx, saved[0].device().type());  // custom_bwd: forward's state, autocast off: fp32
  return {grad[0].unsqueeze(1) * saved[0] / saved[1].unsqueeze(1)};
}

torch::Tensor MatMulAutocast::forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
  amp::CustomFwd fwd(ctx, b.device().type());  // autocast stays as the caller set it
  a = fwd.cast(a);                             // unchanged: no cast_inputs
  b = fwd.cast(b);
  ctx->save_for_backward({a, b});
  return torch::mm(a, b);
}

variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();  // a fp16, b fp32
  // Autograd runs backward outside autocast; CustomBwd restores forward's, so these mm calls cast again.
  amp::CustomBwd bwd(ctx, saved[0].device().type());
  return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
}

}  // namespace lab12
