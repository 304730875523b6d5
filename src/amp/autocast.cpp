#include "amp/autocast.h"

#include <string>

#include <ATen/autocast_mode.h>

#include "amp/device_caps.h"

namespace amp {
namespace {

void validate(c10::DeviceType dev, c10::ScalarType dtype) {
  if (dev != c10::DeviceType::CPU && dev != c10::DeviceType::CUDA) {
    throw AutocastError("amp::Autocast supports the cpu and cuda devices only, got " +
                        c10::DeviceTypeName(dev, /*lower_case=*/true));
  }
  if (dtype != c10::kHalf && dtype != c10::kBFloat16) {
    throw AutocastError(std::string("amp::Autocast: lower-precision dtype must be float16 or bfloat16, got ") +
                        c10::toString(dtype));
  }
  if (dev == c10::DeviceType::CUDA) {
    if (!cuda_available()) {
      throw AutocastError("amp::Autocast: CUDA autocast requested, but no CUDA device is available");
    }
    if (dtype == c10::kBFloat16 && !cuda_supports_bf16()) {
      throw AutocastError("amp::Autocast: this CUDA device does not support bfloat16; use float16");
    }
  }
}

}  // namespace

Autocast::Autocast(c10::Device device, std::optional<c10::ScalarType> dtype, bool enabled,
                   std::optional<bool> cache_enabled)
    : device_type_(device.type()),
      dtype_(dtype.value_or(at::autocast::get_autocast_dtype(device.type()))),
      enabled_(enabled),
      cache_enabled_(cache_enabled.value_or(at::autocast::is_autocast_cache_enabled())) {
  // Python validates only when enabled: `autocast(..., enabled=False)` with any dtype is accepted.
  if (enabled_) validate(device_type_, dtype_);
  // __enter__, in Python's order.
  prev_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  prev_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_enabled(device_type_, enabled_);
  at::autocast::set_autocast_dtype(device_type_, dtype_);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(cache_enabled_);
}

Autocast::~Autocast() {
  // __exit__: the cast cache holds low-precision copies of weights the optimizer will change in
  // place, so it is dropped when the outermost region ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_enabled_);
}

bool is_autocast_enabled(c10::DeviceType device_type) {
  return at::autocast::is_autocast_enabled(device_type);
}

}  // namespace amp
