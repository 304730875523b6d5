// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 12's amp.cpp with RowNormFp32's
// CustomFwd replaced by a cast by hand (h.to(kFloat)); its backward's CustomBwd finds no record.
//
// expect-hint: no-custom-fwd
#include "amp.h"

#include "amp/custom_function.h"

namespace lab12 {

torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  h = h.to(torch::kFloat);  // by hand, no CustomFwd
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
  amp::CustomFwd fwd(ctx, a.device().type());  // no cast_inputs: records autocast's state and keeps it
  ctx->save_for_backward({a, b});
  return a.mm(b);  // under autocast: mm casts both to fp16
}

variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();  // a fp16, b fp32
  // Autograd runs backward outside autocast; CustomBwd restores forward's, so these mm calls cast again.
  amp::CustomBwd bwd(ctx, saved[0].device().type());
  return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
}

}  // namespace lab12
