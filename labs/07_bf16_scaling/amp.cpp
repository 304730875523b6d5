// Lab 07's AMP code: bf16's training step, autocast with no loss scale, and fp16's, which needs a
// GradScaler. lab.cpp runs the first in bf16, fp16 and fp32 and the second in fp16.
#include "amp.h"

#include "amp/autocast.h"

namespace lab07 {

torch::Tensor loss_of(torch::nn::Sequential& model, torch::ScalarType dtype, const torch::Tensor& x,
                      const torch::Tensor& y) {
  // The Linears run in 16 bits, mse_loss in fp32 (autocast's op policy); kFloat: autocast off.
  amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);
  return torch::mse_loss(model->forward(x), y);
}

void step_without_scaler(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::ScalarType dtype,
                         const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  // bf16 has fp32's exponent range, so small gradients need no loss scale: a plain backward (outside
  // autocast) and step.
  loss_of(model, dtype, x, y).backward();
  opt.step();
}

void fp16_step_with_scaler(torch::nn::Sequential& model, torch::optim::Optimizer& opt,
                           amp::GradScaler& scaler, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  scaler.scale(loss_of(model, torch::kHalf, x, y)).backward();  // backward from loss x scale
  scaler.step(opt);                                             // unscales in fp32; skips on inf/NaN
  scaler.update();  // halves the scale after an overflow; doubles it after growth_interval clean steps
}

}  // namespace lab07
