// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 02's amp.cpp with the optimizer
// stepped directly after unscale_, so a step whose gradients overflowed is taken all the same.
//
// expect-hint: opt-step-direct
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
  scaler.scale(loss).backward();
  scaler.unscale_(opt);  // the gradients back to their true size, inf/NaN recorded
  opt.step();            // the mistake: steps whatever unscale_ found
  scaler.update();
  return true;
}

}  // namespace lab02
