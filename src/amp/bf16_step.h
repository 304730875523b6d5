// amp::Bf16Step: train parameters held in bf16, with no fp32 master copy, with any LibTorch optimizer. The
// optimizer computes its update in fp32, and the new weights are written back to bf16 by stochastic
// rounding (the default) or with a Kahan compensation buffer (amp/bf16_update.h), so updates smaller than
// half a bf16 spacing are kept: in expectation, or in the buffer. The C++ form of torchao's
// _AdamW(params, ..., bf16_stochastic_round=True) (torchao/optim/adam.py), for any torch::optim optimizer:
//
//   model->to(torch::kBFloat16);                    // the weights are bf16, and there is no other copy
//   amp::Bf16Step opt(model->parameters(), [](std::vector<torch::Tensor> fp32) {
//     return std::make_unique<torch::optim::AdamW>(fp32, torch::optim::AdamWOptions(1e-3));
//   });
//   for (...) {
//     opt.zero_grad();
//     torch::mse_loss(model->forward(x), y).backward();
//     opt.step();                                   // AdamW's fp32 update, rounded stochastically to bf16
//   }
//
// What step() does, per parameter p with a gradient: an fp32 working copy of p and of its gradient is
// made, the wrapped optimizer steps the working copies (its state, e.g. AdamW's moments, is fp32 and
// persists), and the new fp32 value is written back into p: rounded stochastically (torchao's rounding,
// draw for draw: amp::stochastic_round_), rounded to nearest, or Kahan-compensated (amp::kahan_add_ of
// the fp32 change). The working copies are freed before step() returns: between steps the memory is p
// (2 bytes per weight), the optimizer's state, and for Kahan a bf16 buffer (2 bytes); during step() 8
// more bytes per weight. torchao's _AdamW keeps its moments in the parameter's dtype (bf16); the wrapped
// torch::optim::AdamW keeps them in fp32, so updates differ from torchao's by the moments' rounding.
//
// Seeded and reproducible: the rounding draws from the step's own generator, seeded by options.seed
// (one per device, made at the first step on it), so two runs from the same seed, weights and gradients
// give bitwise the same weights. options.seed = nullopt draws from the device's default generator
// instead, as torchao does (then torch::manual_seed(s) here and torch.manual_seed(s) in Python draw the
// same bits).
// Syncs: none. Every operation is queued on the parameters' device (no value is read back to the host),
// unless the wrapped optimizer itself reads one (torch::optim::LBFGS does; SGD, Adam, AdamW, RMSprop and
// Adagrad do not). Misuse throws Bf16StepError (an amp::Error) before anything is written.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "amp/error.h"

namespace amp {

// A Bf16Step refuses its arguments: a parameter that is not a bf16 leaf, no parameters, no optimizer.
struct Bf16StepError : Error {
  using Error::Error;
};

// How the fp32 result of the wrapped optimizer is written back to a bf16 parameter.
enum class Bf16Rounding {
  Stochastic,  // amp::stochastic_round_: kept in expectation (torchao's bf16_stochastic_round=True)
  Kahan,       // amp::kahan_add_ of the change, with a bf16 compensation buffer per parameter
  Nearest,     // round to nearest (torchao's bf16_stochastic_round=False): small updates are lost
};

struct Bf16StepOptions {
  Bf16Rounding rounding = Bf16Rounding::Stochastic;
  // The seed of the step's own generator; nullopt: the device's default generator (torch::manual_seed).
  std::optional<uint64_t> seed = 0;
};

class Bf16Step {
 public:
  // Makes the wrapped optimizer: given fp32 tensors, one per parameter and in the order of `params`, it
  // returns the optimizer that steps them (any torch::optim::Optimizer, any options, param groups built
  // from those tensors).
  using MakeOptimizer =
      std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor> fp32_params)>;

  // params: bf16 leaf tensors (a module's parameters after module->to(torch::kBFloat16)), on any devices.
  // Throws Bf16StepError when params is empty, a parameter is undefined, not bf16, not a leaf, or listed
  // twice, or make_optimizer returns null.
  Bf16Step(std::vector<torch::Tensor> params, const MakeOptimizer& make_optimizer,
           Bf16StepOptions options = {});

  Bf16Step(const Bf16Step&) = delete;
  Bf16Step& operator=(const Bf16Step&) = delete;
  Bf16Step(Bf16Step&&) = default;
  Bf16Step& operator=(Bf16Step&&) = default;

  // One optimizer step of every parameter that has a gradient (a bf16 or fp32 gradient; a parameter
  // without one is left alone, as torch::optim does). No host sync (see above).
  void step();
  // Clears the parameters' gradients (set_to_none: undefined, else zeros), as Optimizer::zero_grad.
  void zero_grad(bool set_to_none = true);

  // The wrapped optimizer: its options (the learning rate of a schedule) and state. Its parameters are
  // the fp32 working copies, empty between steps.
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const torch::optim::Optimizer& optimizer() const { return *optimizer_; }
  // The bf16 parameters, as given.
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  // The Kahan compensation buffer of parameter i (bf16, p's shape); undefined unless rounding is Kahan.
  const torch::Tensor& compensation(size_t i) const { return compensation_.at(i); }
  const Bf16StepOptions& options() const { return options_; }

 private:
  at::Generator& generator_for(const torch::Device& device);

  std::vector<torch::Tensor> params_;   // bf16, the model's own tensors
  std::vector<torch::Tensor> working_;  // fp32, the wrapped optimizer's parameters; storage only in step()
  std::vector<torch::Tensor> compensation_;  // bf16, Kahan only
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  Bf16StepOptions options_;
  std::map<std::string, at::Generator> generators_;  // by device, seeded from options_.seed
};

}  // namespace amp
