// Exercise 02: the loss-scaling step (lab 02, labs/02_loss_scaling.cpp).
//
// Write train_step(): one Adam step with fp32 master weights under fp16 autocast, with the loss scaled
// by the GradScaler so that small fp16 gradients do not underflow to zero. The lab runs your function
// where it runs its own: 300 steps in fp32 (the scaler disabled), in fp16 without scaling (disabled too)
// and in fp16 with a GradScaler; then with a scaler started far too high, which must skip the steps that
// overflow, back off and grow again.
//
//   amp-lab check 02    builds this file with the lab and runs the lab's checks on it
//   amp-lab watch 02    the same on every save, until every check holds
//
// From the lab (exercise/02_loss_scaling.h): loss_of(model, mse, dtype, x, y), the forward pass and the
// loss, under fp16 autocast when dtype is kHalf.
#include "exercise/02_loss_scaling.h"
#include "amp/grad_scaler.h"

namespace lab02 {

// One optimizer step on (x, y). Returns whether the optimizer stepped (a GradScaler skips a step whose
// gradients hold inf or NaN).
bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::nn::MSELoss& mse, torch::ScalarType dtype, const torch::Tensor& x,
                const torch::Tensor& y) {
  opt.zero_grad();
  const torch::Tensor loss = loss_of(model, mse, dtype, x, y);
  // TODO: back-propagate the loss multiplied by the scaler's scale (scaler.scale), not the loss itself.
  // TODO: step the optimizer through the scaler, which unscales the gradients and skips on inf/NaN.
  // TODO: update the scale (halve it after an overflow, grow it after clean steps).
  return false;  // TODO: return whether the optimizer stepped.
}

}  // namespace lab02
