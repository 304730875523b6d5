// amp::GradScaler: torch.amp.GradScaler for LibTorch, same semantics and the same fused ATen kernels
// (torch/amp/grad_scaler.py). The usual loop:
//
//   amp::GradScaler scaler(device);                 // GradScalerOptions{.enabled = false} for fp32/bf16
//   { amp::Autocast ac(device); loss = loss_fn(model->forward(x), y); }
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);                     // optional: only to clip or inspect grads
//   scaler.step(optimizer);                         // skipped if any grad is inf/NaN
//   scaler.update();                                // back off, or grow after growth_interval clean steps
//
// Device syncs and waits, each also documented at its function: step() makes the one host sync of an
// iteration (it reads whether a gradient was inf/NaN); get_scale(), state_dict(), save(), clone() and
// operator<< read the scale (and tracker) from the device. With a found_inf_reducer (sharded training),
// unscale_() (and step() when it unscales) also waits for the reducer's all-reduce of the inf flags across
// processes. Nothing else waits for the device. host_syncs() counts the host syncs made. Misuse throws
// GradScalerError (an amp::Error).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include "amp/error.h"

namespace amp {

// Misuse of the scaler, with Python's messages ("step() has already been called since the last update().").
struct GradScalerError : Error {
  using Error::Error;
};

// Combines the found_inf flags of several processes (sharded training); amp/distributed.h makes one from a
// c10d process group. Declared here so that this header needs no c10d.
class FoundInfReducer {
 public:
  virtual ~FoundInfReducer() = default;
  // Sums every flag over the processes, in place, before the scaler reads it.
  virtual void all_reduce(std::vector<std::pair<torch::Device, torch::Tensor>>& found_inf_per_device,
                          torch::Device scaler_device) = 0;
};

// GradScalerOptions::process_group's type: it takes a reducer as the old member did, but only through a
// constructor marked deprecated, so the compiler names every place the old name is still set (and not the
// places that leave it alone, as designated initializers of the other options do).
class DeprecatedProcessGroup {
 public:
  DeprecatedProcessGroup() = default;
  template <class Reducer,
            std::enable_if_t<std::is_convertible_v<Reducer, std::shared_ptr<FoundInfReducer>>, int> = 0>
  [[deprecated("GradScalerOptions::process_group is now found_inf_reducer; the old name goes in 1.1")]]
  DeprecatedProcessGroup(Reducer&& reducer)  // NOLINT(google-explicit-constructor): `= reducer` as before
      : reducer_(std::forward<Reducer>(reducer)) {}
  const std::shared_ptr<FoundInfReducer>& get() const { return reducer_; }

 private:
  std::shared_ptr<FoundInfReducer> reducer_;
};

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16, Python's default
  double growth_factor = 2.0;   // scale *= growth_factor after growth_interval clean steps
  double backoff_factor = 0.5;  // scale *= backoff_factor on a step with inf/NaN grads
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: scale() and update() do nothing, step() just steps
  // Set (amp::found_inf_all_reduce(group)) when each rank unscales only its shard of the gradients:
  // found_inf is all-reduced in unscale_(), so step() skips, and update() backs off, on every rank alike.
  // unscale_() then waits for that all-reduce (amp::found_inf_all_reduce: at most its timeout).
  std::shared_ptr<FoundInfReducer> found_inf_reducer;
  // The 0.x name of found_inf_reducer (it never held a process group), kept through 1.0.x: setting it
  // warns at compile time (a deprecated constructor), the scaler still reads it, and setting both is refused.
  DeprecatedProcessGroup process_group;
};

// Python's state_dict(): {scale, growth_factor, backoff_factor, growth_interval, _growth_tracker}.
// A disabled scaler returns an empty state (Python's {}), which load_state_dict refuses.
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;
  bool empty = false;
};

class GradScaler {
 public:
  // A scaler for gradients on `device`; the scale is made at the first scale() call. Throws
  // GradScalerError when enabled and: device is CUDA without a CUDA device, growth_factor <= 1, or
  // backoff_factor >= 1; and when both found_inf_reducer and the deprecated process_group are set. A disabled
  // scaler (options.enabled = false) accepts anything and does nothing.
  explicit GradScaler(torch::Device device, GradScalerOptions options = {});

  // A scaler owns live tensors and per-optimizer state: a plain copy would share the first and not the
  // second, so copies are explicit (clone()) and moves are allowed.
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;
  GradScaler(GradScaler&&) = default;
  GradScaler& operator=(GradScaler&&) = default;

  // copy.deepcopy(scaler): an independent scaler with the same scale, tracker and factors. Like Python's
  // (which goes through __getstate__), refused mid-iteration, between the first unscale_/step and update().
  // Reads the scale and tracker (two host syncs); the copy creates its tensors lazily, at its first scale(),
  // and shares the found_inf_reducer.
  GradScaler clone() const;

  // Returns outputs * scale (each output times the scale, the scale copied once per device). The first
  // call creates the scale (init_scale) and growth tracker on the first output's device. Disabled:
  // returns outputs unchanged. No host sync; does not throw.
  torch::Tensor scale(const torch::Tensor& outputs);
  std::vector<torch::Tensor> scale(const std::vector<torch::Tensor>& outputs);

  // Divides the optimizer's gradients by the scale in place (one fused kernel per device and dtype, the
  // inverse scale computed in float64) and records whether any was inf/NaN. No host sync; with a
  // found_inf_reducer it waits for the reducer's all-reduce of the flags across processes. Optional: call
  // it to clip or inspect the real gradients before step(). Disabled: does nothing.
  // Throws GradScalerError: before any scale() ("... _scale is None"), a second time for this optimizer
  // before update(), after step(), or when a gradient is fp16 (parameters must be fp32 master weights).
  void unscale_(torch::optim::Optimizer& optimizer);

  // Unscales the gradients unless unscale_() already did (waiting for the found_inf_reducer then, as
  // unscale_() does), then calls optimizer.step() unless a gradient was inf/NaN. Returns whether the
  // optimizer stepped. Syncs with the device once per device holding gradients (reads its inf/NaN flag, as
  // Python does): the one host sync of a single-device iteration.
  // Disabled: just optimizer.step(), returns true. Throws GradScalerError before any scale(), a second time
  // for this optimizer before update(), when the optimizer has no gradients (no inf check recorded), or for
  // the errors of unscale_().
  bool step(torch::optim::Optimizer& optimizer);

  // Ends the iteration. No argument: backs the scale off (times backoff_factor) if any optimizer stepped
  // since the last update saw an inf/NaN, else counts a clean step and grows the scale (times
  // growth_factor) after growth_interval clean steps in a row; decided on the device, no host sync.
  // With new_scale: sets the scale to it and leaves the growth tracker alone. Forgets every optimizer's
  // unscale/step state either way. Disabled: does nothing.
  // Throws GradScalerError before any scale(), or without new_scale when no step() or unscale_() recorded
  // an inf check since the last update.
  // Call it once per iteration, after every optimizer's step(). Like Python's, it does not refuse
  // step(o0); update(); step(o1); update(): o1's gradients, scaled by the old scale in backward(), are
  // then unscaled by the new one (2.0x too large after a back-off of 0.5, 0.5x after a growth), silently,
  // and the growth tracker counts one clean step per update(), two per iteration.
  void update(std::optional<double> new_scale = std::nullopt);
  // Sets the scale from a one-element tensor on the scaler's device type, without a host sync. Python's
  // checks: same device type, numel 1, requires_grad false; 0-dim as Python's copy_ requires. Any dtype is
  // copied in as float32, as Python's copy_ does (an integer tensor included).
  void update(const torch::Tensor& new_scale);
  // Python's update(3) fails (an int has no .device): an integer literal is not a scale here either.
  template <typename Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  void update(Int new_scale) = delete;

  // The current scale. Syncs with the device (reads the scale) once it exists; before the first scale()
  // returns init_scale, and 1.0 when disabled. Does not throw.
  double get_scale() const;
  // Whether the scaler was built enabled. Never throws, no sync.
  bool is_enabled() const { return enabled_; }
  // The reducer the scaler was built with (null on one process). Never throws, no sync.
  const std::shared_ptr<FoundInfReducer>& found_inf_reducer() const { return found_inf_reducer_; }

  // Python's get_/set_ accessors. The setters take effect at the next update() and, like Python's, do not
  // validate (the constructor does).
  double get_growth_factor() const { return growth_factor_; }
  void set_growth_factor(double new_factor) { growth_factor_ = new_factor; }
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double new_factor) { backoff_factor_ = new_factor; }
  int64_t get_growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t new_interval) { growth_interval_ = new_interval; }
  // Host syncs this scaler has made (a .item() on a device tensor). The training loop makes one per step.
  int64_t host_syncs() const { return host_syncs_; }

  // Python's state_dict(): scale, factors, interval and growth tracker; an empty state (empty = true)
  // when disabled. Syncs with the device (reads the scale and tracker) once they exist. Does not throw.
  GradScalerState state_dict() const;
  // Takes the scale, factors, interval and growth tracker from `state` (written into the device tensors
  // if they exist, else used when they are made). Disabled: does nothing. No host sync.
  // Throws GradScalerError when state is empty (saved from a disabled scaler).
  void load_state_dict(const GradScalerState& state);

  // torch::serialize support, so one archive holds model, optimizer and scaler: save writes state_dict()
  // (and syncs like it), load reads it back through load_state_dict (and throws like it, or c10::Error
  // when the archive lacks an entry).
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  // Reads what save() wrote without applying it (load_checkpoint validates everything before applying).
  static GradScalerState read_state(torch::serialize::InputArchive& archive);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    std::vector<std::pair<torch::Device, torch::Tensor>> found_inf_per_device;  // insertion order
  };

  OptimizerState& state_of(const torch::optim::Optimizer& optimizer);
  void require_scale(const char* funcname) const;
  void lazy_init(torch::Device device);
  int64_t growth_tracker_value() const;
  // The one place the per-device found_inf flags of an optimizer are combined into the skip decision.
  bool any_inf_found(OptimizerState& state);

  torch::Device device_ = torch::kCPU;
  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  std::shared_ptr<FoundInfReducer> found_inf_reducer_;
  torch::Tensor scale_;           // 0-dim float32 on the device, undefined until the first scale()
  torch::Tensor growth_tracker_;  // 0-dim int32 on the device
  // Keyed by identity, like Python's id(optimizer); a vector keeps the order update() combines them in.
  std::vector<std::pair<const torch::optim::Optimizer*, OptimizerState>> per_optimizer_;
  mutable int64_t host_syncs_ = 0;
};

// archive << scaler and archive >> scaler: the same as scaler.save(archive) and scaler.load(archive).
torch::serialize::OutputArchive& operator<<(torch::serialize::OutputArchive& archive,
                                            const GradScaler& scaler);
torch::serialize::InputArchive& operator>>(torch::serialize::InputArchive& archive, GradScaler& scaler);

}  // namespace amp
