#include "amp/device_caps.h"

#include <torch/cuda.h>
#include <torch/types.h>

// The CUDA headers exist only with a CUDA LibTorch; a CPU build compiles the fallbacks below.
#if __has_include(<cuda_runtime_api.h>) && __has_include(<ATen/cuda/CUDAContext.h>)
#include <ATen/cuda/CUDAContext.h>
#define AMP_LAB_HAS_CUDA_HEADERS 1
#else
#define AMP_LAB_HAS_CUDA_HEADERS 0
#endif

namespace amp {

bool cuda_available() { return torch::cuda::is_available(); }

int cuda_compute_capability() {
#if AMP_LAB_HAS_CUDA_HEADERS
  if (!cuda_available()) return 0;
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  return prop->major * 10 + prop->minor;
#else
  return 0;
#endif
}

bool bf16_supported_rule(bool cuda_available, int compute_capability, const std::function<bool()>& bf16_tensor_creatable,
                         bool including_emulation) {
  if (!cuda_available) return false;
  if (compute_capability >= 80) return true;
  if (!including_emulation) return false;
  return bf16_tensor_creatable();
}

namespace {
// Python's _check_bf16_tensor_supported for the current device, asked once (Python caches it too).
bool bf16_tensor_creatable_on_cuda() {
  static const bool creatable = [] {
    try {
      torch::tensor({1.0}, torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA));
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return creatable;
}
}  // namespace

bool cuda_supports_bf16_natively() {
  return bf16_supported_rule(cuda_available(), cuda_compute_capability(), [] { return false; }, false);
}

bool cuda_supports_bf16() {
  return bf16_supported_rule(cuda_available(), cuda_compute_capability(), bf16_tensor_creatable_on_cuda, true);
}

std::string cuda_device_name() {
#if AMP_LAB_HAS_CUDA_HEADERS
  if (!cuda_available()) return "";
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  return std::string(prop->name) + " (sm_" + std::to_string(prop->major * 10 + prop->minor) + ")";
#else
  return cuda_available() ? "CUDA device" : "";
#endif
}

}  // namespace amp
