// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 11's amp.cpp with the forward passes
// and the losses outside autocast: they run in fp32, so the gradients match fp32's and only their precision
// tells.
//
// expect-hint: forward-in-fp32
#include "amp.h"

#include "amp/autocast.h"

namespace lab11 {

void backward(torch::nn::Linear& m0, torch::nn::Linear& m1, amp::GradScaler& scaler0,
              amp::GradScaler& scaler1, const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor loss0, loss1;
  {
    // the mistake: no amp::Autocast, the forward passes and the losses run in fp32
    const auto out0 = m0->forward(x), out1 = m1->forward(x);
    loss0 = torch::mse_loss(2 * out0 + 3 * out1, y);  // each loss mixes both outputs, so each sends
    loss1 = torch::mse_loss(3 * out0 - 5 * out1, y);  // gradients into both models
  }
  scaler0.scale(loss0).backward(/*gradient=*/{}, /*retain_graph=*/true);  // the graphs share out0 and out1
  scaler1.scale(loss1).backward();  // one scaler: each model's .grad sums gradients of one scale
}

Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  // Each step() unscales and checks only its own optimizer's gradients, and skips it alone on inf/NaN.
  const bool s0 = scaler.step(o0), s1 = scaler.step(o1);
  scaler.update();  // once, after both: backs off if either found inf/NaN, and no step sees the scale move
  return {s0, s1};
}

}  // namespace lab11
