#include "amp/device_caps.h"

#include <torch/cuda.h>

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

bool cuda_supports_bf16() { return cuda_compute_capability() >= 80; }

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
