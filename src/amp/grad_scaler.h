// amp::GradScaler: torch.amp.GradScaler for LibTorch, same semantics and the same fused ATen kernels
// (torch/amp/grad_scaler.py). The usual loop:
//
//   amp::GradScaler scaler(device);                 // GradScalerOptions{.enabled = false} for fp32/bf16
//   { amp::Autocast ac(device); loss = loss_fn(model->forward(x), y); }
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);                     // optional: only to clip or inspect grads
//   scaler.step(optimizer);                         // skipped if any grad is inf/NaN
//   scaler.update();                                // back off, or grow after growth_interval clean steps
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

namespace amp {

// Misuse of the scaler, with Python's messages ("step() has already been called since the last update().").
struct GradScalerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GradScalerOptions {
  double init_scale = 65536.0;    // 2^16, Python's default
  double growth_factor = 2.0;     // scale *= growth_factor after growth_interval clean steps
  double backoff_factor = 0.5;    // scale *= backoff_factor on a step with inf/NaN grads
  int64_t growth_interval = 2000;
  bool enabled = true;            // false: scale() and update() do nothing, step() just steps
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
  explicit GradScaler(torch::Device device, GradScalerOptions options = {});

  // A scaler owns live tensors and per-optimizer state: a plain copy would share the first and not the
  // second, so copies are explicit (clone()) and moves are allowed.
  GradScaler(const GradScaler&) = delete;
  GradScaler& operator=(const GradScaler&) = delete;
  GradScaler(GradScaler&&) = default;
  GradScaler& operator=(GradScaler&&) = default;

  // copy.deepcopy(scaler): an independent scaler with the same scale, tracker and factors. Like Python's
  // (which goes through __getstate__), refused mid-iteration, between the first unscale_/step and update().
  // Reads the scale and tracker (two host syncs); the copy creates its tensors lazily, at its first scale().
  GradScaler clone() const;

  // outputs * scale. The scale tensor is created lazily on the first output's device.
  torch::Tensor scale(const torch::Tensor& outputs);
  std::vector<torch::Tensor> scale(const std::vector<torch::Tensor>& outputs);

  // Divides the optimizer's grads by the scale in place and records whether any was inf/NaN.
  // No host sync. At most once per optimizer between update()s, and not after step().
  void unscale_(torch::optim::Optimizer& optimizer);

  // Unscales if needed, then steps unless an inf/NaN was found. Returns whether the optimizer stepped.
  // The one host sync of an iteration happens here.
  bool step(torch::optim::Optimizer& optimizer);

  // Updates the scale from every optimizer stepped since the last update (no host sync), or sets it.
  void update(std::optional<double> new_scale = std::nullopt);
  // Sets the scale from a one-element tensor on the scaler's device type, without a host sync. Python's
  // checks: same device type, numel 1, requires_grad false; 0-dim as Python's copy_ requires. Any dtype is
  // copied in as float32, as Python's copy_ does (an integer tensor included).
  void update(const torch::Tensor& new_scale);
  // Python's update(3) fails (an int has no .device): an integer literal is not a scale here either.
  template <typename Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  void update(Int new_scale) = delete;

  double get_scale() const;  // syncs; 1.0 when disabled
  bool is_enabled() const { return enabled_; }

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

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);

  // torch::serialize support, so one archive holds model, optimizer and scaler.
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
  torch::Tensor scale_;           // 0-dim float32 on the device, undefined until the first scale()
  torch::Tensor growth_tracker_;  // 0-dim int32 on the device
  // Keyed by identity, like Python's id(optimizer); a vector keeps the order update() combines them in.
  std::vector<std::pair<const torch::optim::Optimizer*, OptimizerState>> per_optimizer_;
  mutable int64_t host_syncs_ = 0;
};

torch::serialize::OutputArchive& operator<<(torch::serialize::OutputArchive& archive, const GradScaler& scaler);
torch::serialize::InputArchive& operator>>(torch::serialize::InputArchive& archive, GradScaler& scaler);

}  // namespace amp
