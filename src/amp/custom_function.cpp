#include "amp/custom_function.h"

#include <string>

#include <ATen/autocast_mode.h>

namespace amp {

CustomFwd::CustomFwd(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type,
                     std::optional<c10::ScalarType> cast_inputs)
    : device_type_(device_type), cast_inputs_(cast_inputs) {
  const bool autocast_on = at::autocast::is_autocast_enabled(device_type);
  ctx->saved_data[kFwdDtypeKey] = at::autocast::get_autocast_dtype(device_type);
  // With cast_inputs, forward runs in the dtype asked for, so backward must not autocast either.
  ctx->saved_data[kFwdUsedAutocastKey] = cast_inputs ? false : autocast_on;
  if (cast_inputs && autocast_on) off_.emplace(c10::Device(device_type), std::nullopt, /*enabled=*/false);
}

at::Tensor CustomFwd::cast(const at::Tensor& input) const {
  // Python's _cast: floating point, on the decorator's device type, and not float64.
  const bool eligible = off_ && input.defined() && input.is_floating_point() &&
                        input.device().type() == device_type_ && input.scalar_type() != at::kDouble;
  return eligible ? input.to(*cast_inputs_) : input;
}

Autocast CustomBwd::make(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type) {
  const auto used = ctx->saved_data.find(kFwdUsedAutocastKey);
  const auto dtype = ctx->saved_data.find(kFwdDtypeKey);
  if (used == ctx->saved_data.end() || dtype == ctx->saved_data.end())
    throw AutocastError("CustomBwd", "the forward of this function did not construct an amp::CustomFwd");
  return Autocast(c10::Device(device_type), dtype->second.toScalarType(), /*enabled=*/used->second.toBool());
}

CustomBwd::CustomBwd(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type)
    : guard_(make(ctx, device_type)) {}

}  // namespace amp
