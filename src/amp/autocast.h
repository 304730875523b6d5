// amp::Autocast: an RAII guard with the semantics of Python's torch.autocast (torch/amp/autocast_mode.py).
//
//   {
//     amp::Autocast ac(device);                 // CPU: bf16, CUDA: fp16, like Python's defaults
//     auto loss = torch::mse_loss(model->forward(x), y);
//   }                                           // state restored; cast cache cleared at depth 0
//
// LibTorch has the thread-local switches but no guard (pytorch issue 44710); this is that guard.
//
// Nothing here synchronises with the device: the guard only flips thread-local autocast state. The state
// is per thread (like Python's), except the cast cache of low-precision weight copies, which is
// process-global and cleared when the outermost guard of the thread ends.
#pragma once

#include <optional>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "amp/error.h"

namespace amp {

// Thrown for a request autocast cannot honour. Python warns and silently disables autocast for a CPU dtype
// other than fp16/bf16 or a missing GPU; we refuse those instead, so a lab never "measures" fp32 by
// accident. Python's own error (CUDA bf16 on a GPU without bf16, emulation counting as support) is
// raised with its message. Like Python, CUDA accepts other floating dtypes (float32 included).
struct AutocastError : Error {
  using Error::Error;
};

class Autocast {
 public:
  // Turns autocast on (or, with enabled = false, off) for `device`'s type in this thread until the guard
  // is destroyed; out-of-place ops on the autocast lists then run in `dtype`. Saves the previous state
  // and enters in Python's order (enabled, dtype, nesting depth, cache flag).
  // dtype: the lower-precision type (CPU: fp16 or bf16; CUDA: any floating type); nullopt takes the device's
  // current autocast dtype (bf16 on CPU, fp16 on CUDA unless changed). cache_enabled: nullopt keeps the
  // current setting. Throws AutocastError when enabled and: the device is neither CPU nor CUDA, a CPU dtype
  // is neither fp16 nor bf16, CUDA is asked for without a CUDA device, or bf16 on a GPU where
  // torch.cuda.is_bf16_supported() is false (see check_autocast_request). A disabled guard accepts any device
  // and dtype, as Python's does. No device sync.
  explicit Autocast(c10::Device device, std::optional<c10::ScalarType> dtype = std::nullopt,
                    bool enabled = true, std::optional<bool> cache_enabled = std::nullopt);
  // Leaves the region: clears the cast cache if this was the outermost region, then restores the enabled
  // flag, dtype and cache flag saved at construction (also when unwinding from an exception). Never throws.
  ~Autocast();

  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

  // What the guard set: the device type, the lower-precision dtype, and whether autocast is on in it.
  c10::DeviceType device_type() const { return device_type_; }
  c10::ScalarType dtype() const { return dtype_; }
  bool enabled() const { return enabled_; }

 private:
  c10::DeviceType device_type_;
  c10::ScalarType dtype_;
  bool enabled_;
  bool cache_enabled_;
  // What __enter__ saved, restored by __exit__.
  bool prev_cache_enabled_;
  bool prev_enabled_;
  c10::ScalarType prev_dtype_;
};

// The checks the constructor makes (torch.autocast.__init__'s, in its order), with the machine's answers
// passed in, so the CUDA rules can be tested on a machine without a GPU. Throws AutocastError.
struct AutocastDeviceCaps {
  bool cuda_available;
  bool cuda_bf16;  // torch.cuda.is_bf16_supported(): emulation counts
};
void check_autocast_request(c10::DeviceType device_type, c10::ScalarType dtype,
                            const AutocastDeviceCaps& caps);

// Whether autocast is currently on for the device in this thread (torch.is_autocast_enabled(dev)).
// Never throws, no device sync.
bool is_autocast_enabled(c10::DeviceType device_type);

}  // namespace amp
