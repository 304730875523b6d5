// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 02's amp.cpp without opt.zero_grad():
// each backward adds to the gradients left over, and once one overflowed its inf stays in .grad.
//
// expect-hint: leftover-grad
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
  const torch::Tensor loss = loss_of(model, mse, dtype, x, y);  // the mistake: no opt.zero_grad() first
  scaler.scale(loss).backward();
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

}  // namespace lab02
