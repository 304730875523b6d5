// A wrong solution kept by the tests (tests/test_exercises.cpp): RowNormFp32's CustomFwd without cast_inputs:
// the norm is computed in fp16.
//
// expect-hint: no-cast-inputs
#include "exercise/12_custom_autograd.h"

namespace lab12 {
torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  amp::CustomFwd fwd(ctx, h.device().type());
  h = fwd.cast(h);
  const auto n = (h * h).sum(/*dim=*/1).sqrt();
  ctx->save_for_backward({h, n});
  return n;
}
variable_list RowNormFp32::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  amp::CustomBwd bwd(ctx, saved[0].device().type());
  return {grad[0].unsqueeze(1) * saved[0] / saved[1].unsqueeze(1)};
}
}  // namespace lab12

namespace lab12 {
torch::Tensor MatMulAutocast::forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
  amp::CustomFwd fwd(ctx, a.device().type());
  ctx->save_for_backward({a, b});
  return a.mm(b);
}
variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  amp::CustomBwd bwd(ctx, saved[0].device().type());
  return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
}
}  // namespace lab12
