// A wrong solution kept by the tests (tests/test_exercises.cpp): optimizer 1 stepped directly, not through
// the scaler.
//
// expect-hint: optimizer-step-direct
#include "exercise/11_multiple_optimizers.h"

namespace lab11 {
// Forward under autocast and both backward passes. Each loss mixes both outputs, so each sends gradients
// into both models. The recipe scales both losses with one scaler: pass it as scaler0 and scaler1.
void backward(torch::nn::Linear& m0, torch::nn::Linear& m1, amp::GradScaler& scaler0,
              amp::GradScaler& scaler1, const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor loss0, loss1;
  {
    amp::Autocast ac(x.device(), torch::kHalf);
    const auto out0 = m0->forward(x), out1 = m1->forward(x);
    loss0 = torch::mse_loss(2 * out0 + 3 * out1, y);
    loss1 = torch::mse_loss(3 * out0 - 5 * out1, y);
  }
  scaler0.scale(loss0).backward(/*gradient=*/{}, /*retain_graph=*/true);  // the graphs share out0 and out1
  scaler1.scale(loss1).backward();
}

// The recipe's steps: each optimizer's step() unscales and checks only its own gradients (and skips alone on
// inf/NaN); then one update() for both, which backs the scale off if either found inf/NaN.
Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  const bool s0 = scaler.step(o0), s1 = (o1.step(), true);
  scaler.update();
  return {s0, s1};
}
}  // namespace lab11
