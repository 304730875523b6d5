// What this machine offers for 16-bit arithmetic, in words a lab can print and the quiz can cite:
// the CPU's feature flags (/proc/cpuinfo) and, on CUDA, the GPU's compute capability.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <torch/types.h>

namespace lab {

// The words of the first "flags" line of /proc/cpuinfo; empty when it cannot be read (not Linux).
std::set<std::string> cpu_flags();
// The "model name" of /proc/cpuinfo, or "unknown CPU".
std::string cpu_model();

// The CPU flags that name native 16-bit arithmetic, in this order (the others are checked too).
inline const std::vector<std::string>& native_16bit_flags() {
  static const std::vector<std::string> flags = {"avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16"};
  return flags;
}

// The device a lab ran on, as far as 16-bit arithmetic goes. Filled from the machine by
// `hardware_of`; tests build one by hand to check the wording for machines that are not here.
struct Hardware {
  bool cuda = false;
  std::string name;                  // "AMD EPYC", "NVIDIA H200 (sm_90)"
  int compute_capability = 0;        // CUDA: major*10+minor
  std::set<std::string> cpu_flags;   // CPU: /proc/cpuinfo flags (empty: unknown)
};
Hardware hardware_of(torch::Device device);

// The native 16-bit flags among `hw.cpu_flags` ("avx512_bf16, amx_bf16"), or "" when none is listed.
std::string native_16bit_units(const Hardware& hw);

// "a CPU (AMD EPYC) whose /proc/cpuinfo lists avx512_bf16 (native bf16 dot products)",
// "a CPU (...) whose /proc/cpuinfo lists no native 16-bit arithmetic (none of avx512_bf16, ...)",
// "a GPU (NVIDIA H200 (sm_90)) with fp16 and bf16 Tensor Cores", "a GPU (...) with fp16 Tensor Cores
// and no bf16". Reads as the object of "on": "ran at 0.8x the speed of fp32 on <this>".
std::string describe_16bit_hardware(const Hardware& hw);

}  // namespace lab
