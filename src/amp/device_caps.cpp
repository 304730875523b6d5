#include "amp/device_caps.h"

#include <ATen/ops/tensor.h>  // not <torch/types.h>: at::tensor is all this file creates
#include <torch/cuda.h>

// With a CUDA LibTorch (src/CMakeLists.txt defines AMP_LAB_TORCH_CUDA=1 for this file) the current device
// comes from c10/cuda/CUDAFunctions.h and its properties from the CUDA runtime, and nothing else of CUDA is
// included: ATen/cuda/CUDAContext.h would pull in the cuBLAS, cuSPARSE and cuSOLVER headers, which a toolkit
// without the math libraries lacks and a CUDA LibTorch does not need. A CPU-only LibTorch (which ships the
// c10/cuda headers too, but no c10_cuda library), or CUDA headers out of reach, compiles the fallbacks below.
#if defined(AMP_LAB_TORCH_CUDA) && \
    __has_include(<c10/cuda/CUDAFunctions.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#define AMP_LAB_HAS_CUDA_HEADERS 1
#else
#define AMP_LAB_HAS_CUDA_HEADERS 0
#endif

namespace amp {

bool cuda_available() {
  return torch::cuda::is_available();
}

#if AMP_LAB_HAS_CUDA_HEADERS
namespace {
// The current CUDA device, or -1 when there is none or the runtime reports an error (cleared, not thrown).
int current_cuda_device() {
  if (!cuda_available()) return -1;
  try {
    return c10::cuda::current_device();
  } catch (const std::exception&) {
    return -1;
  }
}
}  // namespace
#endif

int cuda_compute_capability() {
#if AMP_LAB_HAS_CUDA_HEADERS
  const int device = current_cuda_device();
  if (device < 0) return 0;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();  // the error is reported as "no capability", not left for the next CUDA call
    return 0;
  }
  return major * 10 + minor;
#else
  return 0;
#endif
}

bool bf16_supported_rule(bool cuda_available, int compute_capability,
                         const std::function<bool()>& bf16_tensor_creatable, bool including_emulation) {
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
      at::tensor({1.0}, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return creatable;
}
}  // namespace

bool cuda_supports_bf16_natively() {
  return bf16_supported_rule(
      cuda_available(), cuda_compute_capability(), [] { return false; }, false);
}

bool cuda_supports_bf16() {
  return bf16_supported_rule(cuda_available(), cuda_compute_capability(), bf16_tensor_creatable_on_cuda,
                             true);
}

std::string cuda_device_name() {
#if AMP_LAB_HAS_CUDA_HEADERS
  const int device = current_cuda_device();
  if (device < 0) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "CUDA device " + std::to_string(device);
  }
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major * 10 + prop.minor) + ")";
#else
  return cuda_available() ? "CUDA device" : "";
#endif
}

}  // namespace amp
