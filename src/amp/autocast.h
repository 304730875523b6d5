// amp::Autocast: an RAII guard with the semantics of Python's torch.autocast (torch/amp/autocast_mode.py).
//
//   {
//     amp::Autocast ac(device);                 // CPU: bf16, CUDA: fp16, like Python's defaults
//     auto loss = torch::mse_loss(model->forward(x), y);
//   }                                           // state restored; cast cache cleared at depth 0
//
// LibTorch has the thread-local switches but no guard (pytorch issue 44710); this is that guard.
#pragma once

#include <optional>
#include <stdexcept>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace amp {

// Thrown for a request autocast cannot honour. Python warns and silently disables autocast for a CPU dtype
// other than fp16/bf16 or a missing GPU; we refuse those instead, so a lab never "measures" fp32 by
// accident. Python's own error (CUDA bf16 on a GPU without bf16, emulation counting as support) is
// raised with its message. Like Python, CUDA accepts other floating dtypes (float32 included).
struct AutocastError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Autocast {
 public:
  // dtype: the lower-precision type (CPU: fp16 or bf16; CUDA: any floating type); nullopt takes the device's current autocast dtype
  // (bf16 on CPU, fp16 on CUDA unless changed). cache_enabled: nullopt keeps the current setting.
  explicit Autocast(c10::Device device, std::optional<c10::ScalarType> dtype = std::nullopt,
                    bool enabled = true, std::optional<bool> cache_enabled = std::nullopt);
  ~Autocast();

  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

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
void check_autocast_request(c10::DeviceType device_type, c10::ScalarType dtype, const AutocastDeviceCaps& caps);

// Whether autocast is currently on for the device in this thread (torch.is_autocast_enabled(dev)).
bool is_autocast_enabled(c10::DeviceType device_type);

}  // namespace amp
