// A correct variant kept by the tests (tests/test_exercises.cpp): lab 02's step with an explicit
// scaler.unscale_(opt) before scaler.step(opt), which then does not unscale again.
//
// expect: pass
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
  torch::Tensor scaled = scaler.scale(loss_of(model, mse, dtype, x, y));
  scaled.backward();
  scaler.unscale_(opt);  // the true gradients now (inf/NaN recorded); step() skips on them
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

}  // namespace lab02
