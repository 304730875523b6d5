// amp::Error: the base of every exception the amp library throws, so that one clause catches anything it
// refused:
//
//   try {
//     scaler.step(optimizer);
//   } catch (const amp::Error& e) {               // any component's misuse or failure
//     std::cerr << e.what() << "\n";             // "amp::GradScaler: step() has already been called ..."
//   }
//
// what() always reads "amp::<where>: <what>": `where` names the class or function that refused
// (GradScaler, Autocast, CustomBwd, stochastic_round_, clip_grad_norm_sharded, checkpoint, NonfiniteWatch,
// found_inf_all_reduce, make_nccl_group, Bf16StochasticStep) and `what` says why; PyTorch's own wording is
// kept after the prefix where Python has a message for the same misuse, so searching for Python's text
// finds it. Each component's type (AutocastError, GradScalerError, ...) derives from amp::Error, for a
// caller that handles one component apart. Errors of LibTorch itself (c10::Error) pass through unchanged.
#pragma once

#include <stdexcept>
#include <string>

namespace amp {

class Error : public std::runtime_error {
 public:
  Error(const std::string& where, const std::string& what)
      : std::runtime_error("amp::" + where + ": " + what), where_(where) {}
  // The class or function that threw ("GradScaler", "stochastic_round_").
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

}  // namespace amp
