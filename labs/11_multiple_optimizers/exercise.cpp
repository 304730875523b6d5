// Exercise 11: two models, two losses, two optimizers and one GradScaler. This is lab 11's amp.cpp with
// backward's and step_recipe's AMP lines taken out.
//
// Write backward() and step_recipe(). Each loss mixes both models' outputs, so each sends gradients into
// both models. The lab (labs/11_multiple_optimizers/lab.cpp) runs your code for 12 steps and, at one of
// them, writes an inf into model 0's gradients, as an overflow would, and at a later one into model 1's:
// only that model's optimizer may skip that step, the scale must back off once each time, the flags you
// return must say what each optimizer did, and both models' applied gradients must equal fp32's.
//
//   amp-lab check 11    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 11    the same on every save, until every check holds
//
// The lab also calls backward() for a loop that gives each loss its own scaler: scale loss0 with scaler0
// and loss1 with scaler1 (in the recipe both are the one scaler).
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
  // TODO: back-propagate loss0 multiplied by scaler0's scale (scaler0.scale), not loss0 itself.
  loss0.backward(/*gradient=*/{}, /*retain_graph=*/true);  // the graphs share out0 and out1
  // TODO: back-propagate loss1 multiplied by scaler1's scale.
  loss1.backward();
}

Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  // TODO: step each optimizer through the scaler, which unscales its gradients and skips it on inf/NaN.
  o0.step();
  o1.step();
  // TODO: update the scale once, after both steps.
  return {true, true};  // TODO: return whether each optimizer stepped.
}

}  // namespace lab11
