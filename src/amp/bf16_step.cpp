#include "amp/bf16_step.h"

#include <sstream>
#include <utility>

#include <ATen/Context.h>
#include <torch/utils.h>

#include "amp/bf16_update.h"

namespace amp {
namespace {

constexpr const char* kBf16StepWhere = "Bf16Step";

[[noreturn]] void refuse_step(const std::string& what) {
  throw Bf16StepError(kBf16StepWhere, what);
}

// A parameter the step can write: a defined bf16 leaf.
void require_bf16_leaf(const torch::Tensor& p, size_t i) {
  std::ostringstream msg;
  msg << "parameter " << i;
  if (!p.defined()) refuse_step(msg.str() + " is an undefined tensor");
  if (p.scalar_type() != torch::kBFloat16) {
    msg << " must be bf16 (the model's weights after module->to(torch::kBFloat16)), got " << p.scalar_type();
    refuse_step(msg.str());
  }
  if (!p.is_leaf()) refuse_step(msg.str() + " is not a leaf tensor (a parameter is one)");
}

}  // namespace

Bf16Step::Bf16Step(std::vector<torch::Tensor> params, const MakeOptimizer& make_optimizer,
                   Bf16StepOptions options)
    : params_(std::move(params)), options_(options) {
  if (params_.empty()) refuse_step("no parameters to step");
  working_.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    require_bf16_leaf(params_[i], i);
    for (size_t j = 0; j < i; ++j) {
      if (params_[j].is_same(params_[i]))
        refuse_step("parameter " + std::to_string(i) + " is listed twice (also as " + std::to_string(j) +
                    ")");
    }
    // Empty until step() gives it storage; the wrapped optimizer keys its state by this tensor's identity.
    working_.push_back(torch::empty({0}, params_[i].options().dtype(torch::kFloat)));
    compensation_.push_back(options_.rounding == Bf16Rounding::Kahan ? torch::zeros_like(params_[i])
                                                                     : torch::Tensor());
  }
  if (!make_optimizer) refuse_step("make_optimizer is empty");
  optimizer_ = make_optimizer(working_);
  if (!optimizer_) refuse_step("make_optimizer returned no optimizer");
}

at::Generator& Bf16Step::generator_for(const torch::Device& device) {
  const std::string key = device.str();
  auto found = generators_.find(key);
  if (found != generators_.end()) return found->second;
  // A clone of the device's default generator (any device type), reseeded: the default one is untouched.
  at::Generator gen = at::globalContext().defaultGenerator(device).clone();
  gen.set_current_seed(*options_.seed);
  return generators_.emplace(key, std::move(gen)).first->second;
}

void Bf16Step::step() {
  torch::NoGradGuard no_grad;
  // Everything is checked before anything is written.
  for (size_t i = 0; i < params_.size(); ++i) {
    require_bf16_leaf(params_[i], i);
    const torch::Tensor& grad = params_[i].grad();
    if (!grad.defined()) continue;
    if (grad.is_sparse()) refuse_step("parameter " + std::to_string(i) + " has a sparse gradient");
    if (grad.sizes() != params_[i].sizes())
      refuse_step("parameter " + std::to_string(i) + "'s gradient differs from it in shape");
  }
  // fp32 working copies of the weights and gradients; the wrapped optimizer steps them.
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& grad = params_[i].grad();
    if (!grad.defined()) continue;
    working_[i].set_(params_[i].detach().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true));
    working_[i].mutable_grad() = grad.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
  }
  optimizer_->step();
  // The new fp32 values back into the bf16 parameters, in parameter order (torchao's order of draws).
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& w = working_[i];
    if (!w.mutable_grad().defined()) continue;
    const torch::Tensor& p = params_[i];
    switch (options_.rounding) {
      case Bf16Rounding::Stochastic:
        if (options_.seed)
          stochastic_round_(p, w, generator_for(p.device()));
        else
          stochastic_round_(p, w);  // the device's default generator, as torchao draws
        break;
      case Bf16Rounding::Kahan:
        kahan_add_(p, compensation_[i], w - p.to(torch::kFloat));  // the change the optimizer made
        break;
      case Bf16Rounding::Nearest:
        p.copy_(w);
        break;
    }
    w.mutable_grad().reset();
    w.set_();  // frees the working copy; the tensor (and the optimizer's state keyed by it) stays
  }
}

void Bf16Step::zero_grad(bool set_to_none) {
  for (torch::Tensor& p : params_) {
    torch::Tensor& grad = p.mutable_grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      grad.reset();
    } else {
      grad = grad.detach();
      grad.zero_();
    }
  }
}

}  // namespace amp
