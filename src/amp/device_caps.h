// What the machine offers for 16-bit work, asked at run time so one build serves CPU and CUDA.
// None of these throws or synchronises with the device; with a CPU-only LibTorch they report no CUDA.
#pragma once

#include <functional>
#include <string>

namespace amp {

// Whether this LibTorch was built with CUDA and sees at least one CUDA device (torch.cuda.is_available()).
bool cuda_available();
// torch.cuda.is_bf16_supported() (including_emulation=True, PyTorch 2.13): false without CUDA; true from
// compute capability 8.0 (Ampere+, native bf16); below that, true if a bf16 tensor can be created on the
// current device (emulated bf16, e.g. Volta/Turing), which is what Python's autocast accepts.
bool cuda_supports_bf16();
// The same rule with including_emulation=False: compute capability 8.0 or newer only.
bool cuda_supports_bf16_natively();
// The rule itself, separated from the device queries so that it can be tested on any machine:
// capability >= 8.0 -> true; else, with emulation counted, whether a bf16 tensor can be made (asked
// only then, as Python asks only then).
bool bf16_supported_rule(bool cuda_available, int compute_capability,
                         const std::function<bool()>& bf16_tensor_creatable, bool including_emulation = true);
// "NVIDIA H200 (sm_90)", or "" when there is no CUDA device.
std::string cuda_device_name();
// The current CUDA device's compute capability as major*10+minor (90 for 9.0), or 0 when there is no
// CUDA device or this LibTorch was built without CUDA.
int cuda_compute_capability();

}  // namespace amp
