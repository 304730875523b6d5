// Lab 06's judge: the lab's own step and its verdict on which fp16 steps overflowed.
// Every check compares train_step with them; written here so that the learner's amp.cpp cannot move them.
#include "judge.h"

#include <cmath>
#include <iterator>

#include "amp.h"
#include "amp/autocast.h"
#include "lab/libtorch.h"

namespace lab06::judge {

namespace F = torch::nn::functional;

namespace {

// Backward from the loss times `scale`, under autocast in `dtype` (kFloat: none), the gradients divided by
// the scale again in fp32. False when a gradient is inf/NaN.
bool backward_unscaled(torch::nn::Sequential& model, torch::ScalarType dtype, double scale,
                       const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);
    loss = F::cross_entropy(model->forward(x), y);
  }
  (loss * scale).backward();
  torch::NoGradGuard no_grad;
  bool finite = true;
  for (auto& w : model->parameters()) {
    w.grad().div_(scale);
    finite = finite && torch::isfinite(w.grad()).all().item<bool>();
  }
  return finite;
}

}  // namespace

double lab_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::ScalarType dtype,
                double scale, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  if (!backward_unscaled(model, dtype, scale, x, y)) return std::nan("");
  const double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), kClipNorm);
  opt.step();
  return norm;
}

// From autograd::grad (the .grad the learner's step uses untouched) and the Linears alone (lab.cpp leaves
// out the dtype recorder, which reads the learner's forward), so it depends neither on the scaler nor on
// the learner.
bool overflows(const torch::nn::Sequential& model, size_t layers, double scale, const torch::Tensor& x,
               const torch::Tensor& y) {
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), torch::kHalf);
    torch::nn::Sequential shared = model;  // the same modules, not a copy
    torch::Tensor h = x;
    for (auto it = shared->begin(); it != shared->begin() + static_cast<std::ptrdiff_t>(layers); ++it)
      h = it->forward(h);
    loss = F::cross_entropy(h, y);
  }
  bool finite = true;
  for (const auto& g : torch::autograd::grad({loss * scale}, model->parameters()))
    finite = finite && torch::isfinite(g).all().item<bool>();
  return !finite;
}

}  // namespace lab06::judge
