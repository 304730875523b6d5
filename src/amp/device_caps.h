// What the machine offers for 16-bit work, asked at run time so one build serves CPU and CUDA.
// None of these throws or synchronises with the device; with a CPU-only LibTorch they report no CUDA.
#pragma once

#include <string>

namespace amp {

// Whether this LibTorch was built with CUDA and sees at least one CUDA device (torch.cuda.is_available()).
bool cuda_available();
// Whether the current CUDA device has compute capability 8.0 or newer (Ampere+), so native bf16
// (torch.cuda.is_bf16_supported()); false without a CUDA device.
bool cuda_supports_bf16();
// The current CUDA device's name and architecture, "NVIDIA H200 (sm_90)"; "" when there is no CUDA device.
std::string cuda_device_name();
// The current CUDA device's compute capability as major*10+minor (90 for 9.0), or 0 when there is no
// CUDA device or this LibTorch was built without CUDA.
int cuda_compute_capability();

}  // namespace amp
