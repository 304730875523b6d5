// Lab 02's judge: the lab's fp32 step and its overflow verdict, which the checks hold train_step to.
// Written here so that nothing in the learner's amp.cpp can move them; lab.cpp runs them beside train_step.
#include "judge.h"

#include "amp/autocast.h"
#include "lab/libtorch.h"

namespace lab02::judge {

namespace uf = lab::underflow;

// On a copy of the model, so that the verdict depends neither on the scaler nor on the .grad the learner's
// step leaves behind (a step that calls zero_grad() after stepping leaves none, and is right).
bool overflows(const torch::nn::Sequential& model, const uf::Problem& p, torch::nn::MSELoss& mse,
               double scale) {
  torch::nn::Sequential copy = uf::copy_of(model);
  torch::Tensor loss;
  {
    amp::Autocast autocast(p.x.device(), torch::kHalf);
    loss = mse(copy->forward(p.x), p.y);
  }
  (loss * scale).backward();
  return !uf::grads_finite(copy);
}

// Not train_step in fp32: a mistake made in every precision (an optimizer stepped twice, a gradient left
// over) would then be in the reference too.
void fp32_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::nn::MSELoss& mse,
               const uf::Problem& p) {
  opt.zero_grad();
  mse(model->forward(p.x), p.y).backward();
  opt.step();
}

}  // namespace lab02::judge
