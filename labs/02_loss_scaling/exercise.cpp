// Exercise 02: the loss-scaling step. This is lab 02's amp.cpp with train_step's AMP lines taken out.
//
// Write train_step(): one Adam step with fp32 master weights under fp16 autocast, with the loss scaled
// by the GradScaler so that small fp16 gradients do not underflow to zero. The lab (labs/02_loss_scaling/
// lab.cpp) runs your function where it runs its own: in fp32 (the scaler disabled), in fp16 without scaling
// (disabled too) and in fp16 with a GradScaler; then with a scaler started far too high, which must skip
// the steps that overflow, back off and grow again.
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
  // TODO: back-propagate the loss multiplied by the scaler's scale (scaler.scale), not the loss itself.
  // TODO: step the optimizer through the scaler, which unscales the gradients and skips on inf/NaN.
  // TODO: update the scale (halve it after an overflow, grow it after clean steps).
  return false;  // TODO: return whether the optimizer stepped.
}

}  // namespace lab02
