// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 12's amp.cpp with MatMulAutocast's
// CustomFwd given cast_inputs=fp16: under fp16 autocast and outside it this is what following autocast
// gives, under bf16 autocast it is fp16, not bf16.
//
// expect-hint: matmul-cast-inputs-fp16
#include "amp.h"

#include "amp/custom_function.h"

namespace lab12 {

torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  // custom_fwd(cast_inputs=torch.float32): autocast is off until forward returns.
  amp::CustomFwd fwd(ctx, h.device().type(), /*cast_inputs=*/torch::kFloat);
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
  amp::CustomFwd fwd(ctx, a.device().type(), /*cast_inputs=*/torch::kHalf);  // the mistake: pinned to fp16
  a = fwd.cast(a);
  b = fwd.cast(b);
  ctx->save_for_backward({a, b});
  return a.mm(b);  // fp16 under any autocast, fp32 outside it
}

variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();  // a fp16, b fp32
  // Autograd runs backward outside autocast; CustomBwd restores forward's, so these mm calls cast again.
  amp::CustomBwd bwd(ctx, saved[0].device().type());
  return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
}

}  // namespace lab12
