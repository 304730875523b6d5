// Exercise 11: two models, two losses, two optimizers and one GradScaler. This is lab 11's amp.cpp with
// backward's and step_recipe's AMP lines taken out.
//
// Write backward() and step_recipe(). Each loss mixes both models' outputs, so each sends gradients into
// both models: a model's .grad is the sum of two losses' gradients, and that sum is one scaled gradient only
// when both losses carry their scaler's factor (in the recipe, one scaler). An optimizer must step on the
// true gradients of its own model and skip only when its own model's gradients overflowed; the scale is
// the scaler's one state, changed once per iteration, after every optimizer has had its step.
//
// What the lab (labs/11_multiple_optimizers/lab.cpp) measures: it runs your code for 12 steps and, at one
// of them, writes an inf into model 0's gradients, as an overflow would, and at a later one into model 1's:
// only that model's optimizer may skip that step, the scale must back off once each time, the flags you
// return must say what each optimizer did, and both models' applied gradients must equal fp32's.
//
//   amp-lab check 11    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 11    the same on every save, until every check holds
//
// The lab also calls backward() for a loop that gives each loss its own scaler (scaler0 for loss0, scaler1
// for loss1); in the recipe both are the one scaler.
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
  // TODO: both losses' gradients kept in fp16's range, each by its own scaler. As written they are not.
  loss0.backward(/*gradient=*/{}, /*retain_graph=*/true);  // the graphs share out0 and out1
  loss1.backward();
}

Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  // TODO: each optimizer's step on its model's true gradients, skipped when they overflowed; the scale's
  //       update once per iteration. As written nothing steps.
  return {false, false};  // TODO: whether each optimizer stepped.
}

}  // namespace lab11
