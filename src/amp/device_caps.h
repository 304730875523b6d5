// What the machine offers for 16-bit work, asked at run time so one build serves CPU and CUDA.
#pragma once

#include <string>

namespace amp {

bool cuda_available();
// Compute capability 8.0 or newer (Ampere+): native bf16 (torch.cuda.is_bf16_supported()).
bool cuda_supports_bf16();
// "NVIDIA H200 (sm_90)", or "" when there is no CUDA device.
std::string cuda_device_name();
// Major*10+minor, or 0 when there is no CUDA device or this LibTorch was built without CUDA.
int cuda_compute_capability();

}  // namespace amp
