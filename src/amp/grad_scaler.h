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
#include <memory>
#include <optional>
#include <stdexcept>
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

// Combines the found_inf flags of several processes (sharded training); amp/distributed.h makes one from a
// c10d process group. Declared here so that this header needs no c10d.
class FoundInfReducer {
 public:
  virtual ~FoundInfReducer() = default;
  // Sums every flag over the processes, in place, before the scaler reads it.
  virtual void all_reduce(std::vector<std::pair<torch::Device, torch::Tensor>>& found_inf_per_device,
                          torch::Device scaler_device) = 0;
};

struct GradScalerOptions {
  double init_scale = 65536.0;    // 2^16, Python's default
  double growth_factor = 2.0;     // scale *= growth_factor after growth_interval clean steps
  double backoff_factor = 0.5;    // scale *= backoff_factor on a step with inf/NaN grads
  int64_t growth_interval = 2000;
  bool enabled = true;            // false: scale() and update() do nothing, step() just steps
  // Set (amp::found_inf_all_reduce(group)) when each rank unscales only its shard of the gradients:
  // found_inf is all-reduced in unscale_(), so step() skips, and update() backs off, on every rank alike.
  std::shared_ptr<FoundInfReducer> process_group;
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

  double get_scale() const;  // syncs; 1.0 when disabled
  bool is_enabled() const { return enabled_; }
  // Host syncs this scaler has made (a .item() on a device tensor). The training loop makes one per step.
  int64_t host_syncs() const { return host_syncs_; }

  GradScalerState state_dict() const;
  void load_state_dict(const GradScalerState& state);

  // torch::serialize support, so one archive holds model, optimizer and scaler.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

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

  torch::Device device_;
  bool enabled_;
  double init_scale_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  std::shared_ptr<FoundInfReducer> process_group_;
  torch::Tensor scale_;           // 0-dim float32 on the device, undefined until the first scale()
  torch::Tensor growth_tracker_;  // 0-dim int32 on the device
  // Keyed by identity, like Python's id(optimizer); a vector keeps the order update() combines them in.
  std::vector<std::pair<const torch::optim::Optimizer*, OptimizerState>> per_optimizer_;
  mutable int64_t host_syncs_ = 0;
};

torch::serialize::OutputArchive& operator<<(torch::serialize::OutputArchive& archive, const GradScaler& scaler);
torch::serialize::InputArchive& operator>>(torch::serialize::InputArchive& archive, GradScaler& scaler);

}  // namespace amp
