// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 02's amp.cpp with the loss
// back-propagated without the scale, the step still through the scaler.
//
// expect-hint: unscaled-backward
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
  const torch::Tensor loss = loss_of(model, mse, dtype, x, y);  // the parameters stay fp32: master weights
  loss.backward();                                              // the scale left out
  const bool stepped = scaler.step(opt);  // unscales in fp32 (divides by the scale); skips on inf/NaN
  scaler.update();  // halves the scale after an overflow; doubles it after growth_interval clean steps
  return stepped;
}

}  // namespace lab02
