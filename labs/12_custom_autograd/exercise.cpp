// Exercise 12: custom autograd functions under autocast. This is lab 12's amp.cpp with its guards taken out.
//
// Write the forward and backward of two custom functions so that they behave under fp16 autocast. Autocast
// does not look inside a custom function's forward as one op: the ops in it are cast one by one, and
// autograd runs backward outside any autocast region, whatever region forward ran in.
//   RowNormFp32     the norm of each row of h, which overflows fp16 (the rows' sums of squares reach ~7e6):
//                   it must compute in fp32 whatever dtype h arrives in, and its backward must agree with
//                   its forward;
//   MatMulAutocast  a.mm(b) that follows autocast in forward, and whose backward must run under the
//                   autocast state forward ran under, or mm refuses the mix of an fp16 and an fp32 operand.
// The code below is the plain functions, without guards: the lab's checks fail on it. The lab
// (labs/12_custom_autograd/lab.cpp) runs them where it runs its own, under fp16 autocast against float64,
// and runs MatMulAutocast once more with forward outside autocast and backward inside an fp16 autocast
// region: its backward must run as its forward did.
//
//   amp-lab check 12    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 12    the same on every save, until every check holds
//
#include "amp.h"

#include "amp/custom_function.h"

namespace lab12 {

torch::Tensor RowNormFp32::forward(AutogradContext* ctx, torch::Tensor h) {
  // TODO: the norm computed in fp32 whatever h's dtype and whatever autocast region forward runs in.
  const auto n = (h * h).sum(/*dim=*/1).sqrt();
  ctx->save_for_backward({h, n});
  return n;
}

variable_list RowNormFp32::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();
  // TODO: backward in the autocast state forward ran in.
  return {grad[0].unsqueeze(1) * saved[0] / saved[1].unsqueeze(1)};
}

torch::Tensor MatMulAutocast::forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
  // TODO: forward follows the caller's autocast (its mm is cast as autocast would), and backward can know
  //       which state that was.
  ctx->save_for_backward({a, b});
  return a.mm(b);  // under autocast: mm casts both to fp16
}

variable_list MatMulAutocast::backward(AutogradContext* ctx, variable_list grad) {
  const auto saved = ctx->get_saved_variables();  // a fp16, b fp32
  // TODO: backward's mm calls cast their operands as forward's did.
  return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
}

}  // namespace lab12
