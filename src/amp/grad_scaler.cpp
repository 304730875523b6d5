#include "amp/grad_scaler.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include "amp/device_caps.h"

namespace amp {
namespace {

// Python's _MultiDeviceReplicator: one copy of a small tensor per device, made on first request.
class PerDevice {
 public:
  explicit PerDevice(torch::Tensor master) : master_(std::move(master)) {}
  torch::Tensor& get(const torch::Device& device) {
    for (auto& [dev, t] : copies_)
      if (dev == device) return t;
    copies_.emplace_back(device, master_.to(device, /*non_blocking=*/true, /*copy=*/true));
    return copies_.back().second;
  }
  std::vector<std::pair<torch::Device, torch::Tensor>> take() { return std::move(copies_); }

 private:
  torch::Tensor master_;
  std::vector<std::pair<torch::Device, torch::Tensor>> copies_;
};

// Grads grouped by device, then dtype, each in order of first appearance (as Python's nested dicts).
using GradGroups = std::vector<
    std::pair<torch::Device, std::vector<std::pair<torch::ScalarType, std::vector<torch::Tensor>>>>>;

void add_grad(GradGroups& groups, const torch::Tensor& grad) {
  auto dev_it =
      std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == grad.device(); });
  if (dev_it == groups.end()) {
    groups.push_back({grad.device(), {}});
    dev_it = std::prev(groups.end());
  }
  auto& by_dtype = dev_it->second;
  auto dt_it = std::find_if(by_dtype.begin(), by_dtype.end(),
                            [&](const auto& g) { return g.first == grad.scalar_type(); });
  if (dt_it == by_dtype.end()) {
    by_dtype.push_back({grad.scalar_type(), {}});
    dt_it = std::prev(by_dtype.end());
  }
  dt_it->second.push_back(grad);
}

}  // namespace

GradScaler::GradScaler(torch::Device device, GradScalerOptions options)
    : device_(device),
      enabled_(options.enabled),
      init_scale_(options.init_scale),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval),
      found_inf_reducer_(std::move(options.found_inf_reducer)) {
  // The deprecated name is read here, and only here.
  std::shared_ptr<FoundInfReducer> old_name = options.process_group.get();
  if (old_name && found_inf_reducer_ && old_name != found_inf_reducer_)
    throw GradScalerError(
        "GradScaler",
        "found_inf_reducer and the deprecated process_group are both set; set found_inf_reducer");
  if (old_name) found_inf_reducer_ = std::move(old_name);
  if (!enabled_) return;
  // Python warns and disables itself here; a lab asking for CUDA on a CPU machine should hear about it.
  if (device_.is_cuda() && !cuda_available())
    throw GradScalerError("GradScaler", "CUDA requested, but no CUDA device is available");
  if (growth_factor_ <= 1.0) throw GradScalerError("GradScaler", "The growth factor must be > 1.0.");
  if (backoff_factor_ >= 1.0) throw GradScalerError("GradScaler", "The backoff factor must be < 1.0.");
}

void GradScaler::lazy_init(torch::Device device) {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::full({}, init_scale_, f32);
  growth_tracker_ = torch::full({}, init_growth_tracker_, f32.dtype(torch::kInt32));
}

void GradScaler::require_scale(const char* funcname) const {
  if (!scale_.defined())
    throw GradScalerError("GradScaler", std::string("Attempted ") + funcname +
                                            " but _scale is None.  This may indicate your script did not use "
                                            "scaler.scale(loss or outputs) earlier in the iteration.");
}

GradScaler::OptimizerState& GradScaler::state_of(const torch::optim::Optimizer& optimizer) {
  for (auto& [opt, state] : per_optimizer_)
    if (opt == &optimizer) return state;
  per_optimizer_.emplace_back(&optimizer, OptimizerState{});
  return per_optimizer_.back().second;
}

torch::Tensor GradScaler::scale(const torch::Tensor& outputs) {
  if (!enabled_) return outputs;
  if (!scale_.defined()) lazy_init(outputs.device());
  return outputs * scale_.to(outputs.device(), /*non_blocking=*/true);
}

std::vector<torch::Tensor> GradScaler::scale(const std::vector<torch::Tensor>& outputs) {
  if (!enabled_) return outputs;
  std::vector<torch::Tensor> scaled;
  scaled.reserve(outputs.size());
  std::optional<PerDevice> stash;  // one copy of the scale per device, shared by all outputs
  for (const auto& out : outputs) {
    if (!stash) {
      if (!scale_.defined()) lazy_init(out.device());
      stash.emplace(scale_);
    }
    scaled.push_back(out * stash->get(out.device()));
  }
  return scaled;
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!enabled_) return;
  require_scale("unscale_");
  OptimizerState& state = state_of(optimizer);
  if (state.stage == Stage::Unscaled)
    throw GradScalerError("GradScaler",
                          "unscale_() has already been called on this optimizer since the last update().");
  if (state.stage == Stage::Stepped)
    throw GradScalerError("GradScaler", "unscale_() is being called after step().");

  // The reciprocal in float64, then float32: exactly what Python does, so 1/scale rounds the same way.
  torch::Tensor inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  torch::Tensor found_inf = torch::full({}, 0.0, scale_.options().dtype(torch::kFloat32));
  PerDevice per_device_inv_scale(inv_scale);
  PerDevice per_device_found_inf(found_inf);

  torch::NoGradGuard no_grad;
  GradGroups groups;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      if (!param.grad().defined()) continue;
      torch::Tensor& grad = param.mutable_grad();
      if (grad.scalar_type() == torch::kHalf)
        throw GradScalerError("GradScaler", "Attempting to unscale FP16 gradients.");
      add_grad(groups, grad.is_sparse() ? grad._values() : grad);
    }
  }
  for (auto& [device, by_dtype] : groups) {
    for (auto& [dtype, grads] : by_dtype) {
      // One fused kernel per (device, dtype): multiply by inv_scale and flag any inf/NaN.
      at::_amp_foreach_non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                     per_device_inv_scale.get(device));
    }
  }
  state.found_inf_per_device = per_device_found_inf.take();
  // Sharded gradients: the verdict is global (ShardedGradScaler.unscale_), before step() reads it.
  if (found_inf_reducer_) found_inf_reducer_->all_reduce(state.found_inf_per_device, device_);
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  require_scale("step");
  if (state_of(optimizer).stage == Stage::Stepped)
    throw GradScalerError("GradScaler", "step() has already been called since the last update().");
  if (state_of(optimizer).stage == Stage::Ready) unscale_(optimizer);
  OptimizerState& state = state_of(optimizer);
  if (state.found_inf_per_device.empty())
    throw GradScalerError("GradScaler", "No inf checks were recorded for this optimizer.");

  const bool stepped = !any_inf_found(state);
  if (stepped) optimizer.step();
  state.stage = Stage::Stepped;
  return stepped;
}

bool GradScaler::any_inf_found(OptimizerState& state) {
  // Python's _maybe_opt_step: sum(v.item() for v in found_inf_per_device.values()). One blocking read per
  // device: a non_blocking CUDA->CPU copy read at once could see the flag before the kernel set it.
  double total = 0.0;
  for (auto& [device, flag] : state.found_inf_per_device) {
    ++host_syncs_;
    total += flag.item<double>();
  }
  return total != 0.0;
}

void GradScaler::update(const torch::Tensor& new_scale) {
  if (!enabled_) return;
  require_scale("update");
  const char* reason =
      "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
      "requires_grad=False.";
  if (!new_scale.defined() || new_scale.device().type() != device_.type() || new_scale.numel() != 1 ||
      new_scale.requires_grad())
    throw GradScalerError("GradScaler", reason);
  // Python's copy_ into the 0-dim scale fails for shape [1] ("doesn't match the broadcast shape"); said here.
  if (new_scale.dim() != 0)
    throw GradScalerError("GradScaler", std::string(reason) + " (got a tensor of dim > 0)");
  scale_.copy_(new_scale);  // asynchronous on the device: no host sync
  per_optimizer_.clear();
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  require_scale("update");
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    std::vector<torch::Tensor> found_infs;
    for (auto& [opt, state] : per_optimizer_)
      for (auto& [dev, found_inf] : state.found_inf_per_device)
        // non_blocking only towards a device: a device->CPU copy must complete before the CPU kernel reads
        // it.
        found_infs.push_back(found_inf.to(scale_.device(), /*non_blocking=*/!scale_.device().is_cpu()));
    if (found_infs.empty())
      throw GradScalerError("GradScaler", "No inf checks were recorded prior to update.");
    torch::Tensor combined = found_infs.front();
    for (size_t i = 1; i < found_infs.size(); ++i) combined += found_infs[i];
    // The fused kernel decides on the device: no host sync.
    at::_amp_update_scale_(scale_, growth_tracker_, combined, growth_factor_, backoff_factor_,
                           growth_interval_);
  }
  per_optimizer_.clear();
}

GradScaler GradScaler::clone() const {
  if (enabled_ && !per_optimizer_.empty())
    throw GradScalerError(
        "GradScaler",
        "A GradScaler instance may only be pickled at the beginning of an iteration, or at the "
        "end after scaler.update().");
  GradScaler copy(device_, GradScalerOptions{.init_scale = init_scale_,
                                             .growth_factor = growth_factor_,
                                             .backoff_factor = backoff_factor_,
                                             .growth_interval = growth_interval_,
                                             .enabled = false});
  copy.enabled_ = enabled_;  // built disabled so that the constructor's checks do not run twice
  copy.found_inf_reducer_ = found_inf_reducer_;  // a copy on one rank still decides with the others
  if (enabled_) {
    // Python's __getstate__: the copy re-creates its tensors lazily from the current values.
    copy.init_scale_ = get_scale();
    copy.init_growth_tracker_ = growth_tracker_value();
  }
  return copy;
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  if (!scale_.defined()) return init_scale_;
  ++host_syncs_;
  return scale_.item<float>();
}

int64_t GradScaler::growth_tracker_value() const {
  if (!growth_tracker_.defined()) return init_growth_tracker_;
  ++host_syncs_;
  return growth_tracker_.item<int32_t>();
}

GradScalerState GradScaler::state_dict() const {
  if (!enabled_) return GradScalerState{.empty = true};
  return GradScalerState{get_scale(),      growth_factor_,         backoff_factor_,
                         growth_interval_, growth_tracker_value(), false};
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  if (!enabled_) return;
  if (state.empty)
    throw GradScalerError("GradScaler",
                          "The source state dict is empty, possibly because it was saved from a disabled "
                          "instance of GradScaler.");
  init_scale_ = state.scale;
  if (scale_.defined()) scale_.fill_(state.scale);
  growth_factor_ = state.growth_factor;
  backoff_factor_ = state.backoff_factor;
  growth_interval_ = state.growth_interval;
  init_growth_tracker_ = state.growth_tracker;
  if (growth_tracker_.defined()) growth_tracker_.fill_(state.growth_tracker);
}

void GradScaler::save(torch::serialize::OutputArchive& archive) const {
  const GradScalerState s = state_dict();
  archive.write("empty", c10::IValue(s.empty));
  archive.write("scale", c10::IValue(s.scale));
  archive.write("growth_factor", c10::IValue(s.growth_factor));
  archive.write("backoff_factor", c10::IValue(s.backoff_factor));
  archive.write("growth_interval", c10::IValue(s.growth_interval));
  archive.write("_growth_tracker", c10::IValue(s.growth_tracker));
}

GradScalerState GradScaler::read_state(torch::serialize::InputArchive& archive) {
  auto read = [&](const char* key) {
    c10::IValue v;
    if (!archive.try_read(key, v))
      throw GradScalerError("GradScaler", std::string("scaler state has no '") + key + "' entry");
    return v;
  };
  GradScalerState s;
  s.empty = read("empty").toBool();
  if (s.empty) return s;
  s.scale = read("scale").toDouble();
  s.growth_factor = read("growth_factor").toDouble();
  s.backoff_factor = read("backoff_factor").toDouble();
  s.growth_interval = read("growth_interval").toInt();
  s.growth_tracker = read("_growth_tracker").toInt();
  return s;
}

void GradScaler::load(torch::serialize::InputArchive& archive) {
  load_state_dict(read_state(archive));
}

torch::serialize::OutputArchive& operator<<(torch::serialize::OutputArchive& archive,
                                            const GradScaler& scaler) {
  scaler.save(archive);
  return archive;
}

torch::serialize::InputArchive& operator>>(torch::serialize::InputArchive& archive, GradScaler& scaler) {
  scaler.load(archive);
  return archive;
}

}  // namespace amp
