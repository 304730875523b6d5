// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 02's amp.cpp with the gradients divided
// by the scale by hand after scaler.unscale_(opt) had already divided them: unscaled twice.
//
// expect-hint: unscaled-twice
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
  scaler.unscale_(opt);
  {
    torch::NoGradGuard no_grad;
    const double scale = scaler.get_scale();
    for (auto& w : model->parameters()) w.grad().div_(scale);  // the mistake: unscale_ already did this
  }
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

}  // namespace lab02
