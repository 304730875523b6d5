// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 02's step with a fixed scale of its
// own (the loss times 1024, the gradients divided again) and the optimizer stepped directly: the scaler is
// not used at all, so nothing is skipped and the scale never adapts.
//
// expect-hint: unscaled-fp16
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
  constexpr double kScale = 1024;  // the mistake: a hand-picked scale, also when the scaler is disabled
  (loss * kScale).backward();
  {
    torch::NoGradGuard no_grad;
    for (auto& w : model->parameters()) w.grad().div_(kScale);
  }
  opt.step();
  return true;
}

}  // namespace lab02
