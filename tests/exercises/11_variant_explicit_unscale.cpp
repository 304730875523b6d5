// A correct variant kept by the tests (tests/test_exercises.cpp): lab 11's amp.cpp with each
// optimizer's gradients unscaled explicitly (unscale_) before its step, and the losses back-propagated
// in the other order.
//
// expect: pass
#include "amp.h"

#include "amp/autocast.h"

namespace lab11 {

void backward(torch::nn::Linear& m0, torch::nn::Linear& m1, amp::GradScaler& scaler0,
              amp::GradScaler& scaler1, const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor loss0, loss1;
  {
    amp::Autocast ac(x.device(), torch::kHalf);  // the forward passes and the losses; backward outside it
    const auto out0 = m0->forward(x), out1 = m1->forward(x);
    loss0 = torch::mse_loss(2 * out0 + 3 * out1, y);  // each loss mixes both outputs, so each sends
    loss1 = torch::mse_loss(3 * out0 - 5 * out1, y);  // gradients into both models
  }
  scaler1.scale(loss1).backward(/*gradient=*/{}, /*retain_graph=*/true);  // loss1 first, keeping the graph
  scaler0.scale(loss0).backward();
}

Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  scaler.unscale_(o0);  // step() sees the optimizer already unscaled and only checks the verdict
  scaler.unscale_(o1);
  const bool s0 = scaler.step(o0);
  const bool s1 = scaler.step(o1);
  scaler.update();
  return {s0, s1};
}

}  // namespace lab11
