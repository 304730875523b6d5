// Exercise 02: the loss-scaling step. This is lab 02's amp.cpp with train_step's AMP lines taken out.
//
// Write train_step(): one Adam step with fp32 master weights under fp16 autocast, its gradients kept from
// fp16's underflow. fp16's smallest subnormal is 2^-24 (about 6e-8): a gradient below it becomes zero in
// the backward pass, and this regression's small gradients do. Multiplied by a large factor before the
// backward pass, they stay in range; the factor must then come out of every gradient before the optimizer
// uses it, and a step whose gradients overflowed to inf or NaN must not reach the weights. The factor is
// not fixed: it is halved after an overflow and grown after a run of clean steps, and the GradScaler
// (amp.h's scaler) owns it. Return whether the optimizer stepped.
//
// What the lab (labs/02_loss_scaling/lab.cpp) measures: your function in fp16 with a GradScaler must keep
// the gradients fp16 alone loses and train like fp32; with a scale started far too high it must skip
// exactly the steps that overflow (and say so in its return value), back off and grow again.
//
//   amp-lab check 02    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 02    the same on every save, until every check holds
#include "amp.h"

#include "amp/autocast.h"

namespace lab02 {

torch::Tensor loss_of(torch::nn::Sequential& model, torch::nn::MSELoss& mse, torch::ScalarType dtype,
                      const torch::Tensor& x, const torch::Tensor& y) {
  // The Linears run in fp16, mse_loss in fp32 (autocast's op policy); disabled, everything stays fp32.
  amp::Autocast autocast(x.device(), torch::kHalf, /*enabled=*/dtype == torch::kHalf);
  return mse(model->forward(x), y);
}

bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::nn::MSELoss& mse, torch::ScalarType dtype, const torch::Tensor& x,
                const torch::Tensor& y) {
  opt.zero_grad();
  const torch::Tensor loss = loss_of(model, mse, dtype, x, y);
  // TODO: the backward pass with the gradients kept in fp16's range, the step on the true gradients (none
  //       when they overflowed), the scale's update. As written nothing steps.
  return false;  // TODO: whether the optimizer stepped.
}

}  // namespace lab02
