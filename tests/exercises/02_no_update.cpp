// A wrong solution kept by the tests (tests/test_exercises.cpp): scaler.update() left out: the scale never
// moves.
//
// expect-hint: no-update
#include "exercise/02_loss_scaling.h"

namespace lab02 {
// One step with fp32 master weights (the model's parameters stay fp32) and loss scaling. With the scaler
// disabled every scaler call passes through: fp16 without scaling. Returns whether the optimizer stepped.
bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::nn::MSELoss& mse, torch::ScalarType dtype, const torch::Tensor& x,
                const torch::Tensor& y) {
  opt.zero_grad();
  const torch::Tensor loss = loss_of(model, mse, dtype, x, y);
  scaler.scale(loss).backward();          // backward from loss x scale: the gradients move up by the scale
  const bool stepped = scaler.step(opt);  // unscales in fp32 (divides by the scale); skips on inf/NaN
  // Halves the scale after an overflow; doubles it after growth_interval clean steps.

  return stepped;
}
}  // namespace lab02
