#include "amp/autocast.h"

#include <string>

#include <ATen/autocast_mode.h>

#include "amp/device_caps.h"

namespace amp {

// torch.autocast.__init__'s checks, in its order. Where Python warns and disables autocast (a CUDA request
// without a GPU, a CPU dtype other than fp16/bf16) we refuse, so a lab never measures fp32 by accident.
void check_autocast_request(c10::DeviceType dev, c10::ScalarType dtype, const AutocastDeviceCaps& caps) {
  if (dev != c10::DeviceType::CPU && dev != c10::DeviceType::CUDA) {
    throw AutocastError("Autocast", "only the cpu and cuda devices are supported, got " +
                                        c10::DeviceTypeName(dev, /*lower_case=*/true));
  }
  if (dev == c10::DeviceType::CUDA) {
    if (!caps.cuda_available) {
      throw AutocastError("Autocast", "CUDA autocast requested, but no CUDA device is available");
    }
    // Python's only dtype check on CUDA; is_bf16_supported() counts emulated bf16 (pre-Ampere) as support.
    if (dtype == c10::kBFloat16 && !caps.cuda_bf16) {
      throw AutocastError("Autocast",
                          "Current CUDA Device does not support bfloat16. Please switch dtype to float16.");
    }
    // Python accepts any dtype on CUDA (float32 included: autocast then computes the fp16 list in fp32);
    // a non-floating dtype is a mistake autocast cannot honour.
    if (!c10::isFloatingType(dtype)) {
      throw AutocastError(
          "Autocast",
          std::string("CUDA lower-precision dtype must be a floating type, got ") + c10::toString(dtype));
    }
    return;
  }
  if (dtype != c10::kHalf && dtype != c10::kBFloat16) {
    throw AutocastError(
        "Autocast",
        std::string("CPU lower-precision dtype must be float16 or bfloat16, got ") + c10::toString(dtype));
  }
}

Autocast::Autocast(c10::Device device, std::optional<c10::ScalarType> dtype, bool enabled,
                   std::optional<bool> cache_enabled)
    : device_type_(device.type()),
      dtype_(dtype.value_or(at::autocast::get_autocast_dtype(device.type()))),
      enabled_(enabled),
      cache_enabled_(cache_enabled.value_or(at::autocast::is_autocast_cache_enabled())) {
  // Python validates only when enabled: `autocast(..., enabled=False)` with any dtype is accepted.
  if (enabled_) {
    const bool cuda = device_type_ == c10::DeviceType::CUDA && cuda_available();
    check_autocast_request(device_type_, dtype_,
                           {.cuda_available = cuda, .cuda_bf16 = cuda && cuda_supports_bf16()});
  }
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
