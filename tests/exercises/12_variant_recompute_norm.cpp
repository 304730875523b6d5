// A correct variant kept by the tests (tests/test_exercises.cpp): lab 12's amp.cpp with RowNormFp32 saving
// only the cast h and recomputing the norm in backward, and MatMulAutocast's gradients computed in the other
// order, with matmul.
//
// expect: pass
#include "amp.h"

#include "amp/custom_function.h"

namespace lab12 {

torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  amp::CustomFwd fwd(ctx, h.device().type(), /*cast_inputs=*/torch::kFloat);
  const auto hf = fwd.cast(h);  // fp32 under autocast
  ctx->save_for_backward({hf});
  return hf.pow(2).sum(/*dim=*/1).sqrt();
}

variable_list RowNormFp32::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  amp::CustomBwd bwd(ctx, saved[0].device().type());  // forward's state: autocast off, fp32
  const auto h = saved[0], n = h.pow(2).sum(/*dim=*/1, /*keepdim=*/true).sqrt();
  return {h * (grad[0].unsqueeze(1) / n)};
}

torch::Tensor MatMulAutocast::forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
  amp::CustomFwd fwd(ctx, a.device().type());  // no cast_inputs: records autocast's state and keeps it
  ctx->save_for_backward({a, b});
  return a.mm(b);  // under autocast: mm casts both to fp16
}

variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  amp::CustomBwd bwd(ctx, saved[1].device().type());  // the guard first, then the two products
  const auto grad_b = saved[0].t().matmul(grad[0]);
  const auto grad_a = grad[0].matmul(saved[1].t());
  return {grad_a, grad_b};
}

}  // namespace lab12
