// What this machine offers for 16-bit arithmetic, in words a lab can print and the quiz can cite:
// the CPU's feature flags (/proc/cpuinfo) and, on CUDA, the GPU's compute capability.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <torch/types.h>

namespace lab {

// The words of the first "flags" line of /proc/cpuinfo; empty when it cannot be read (not Linux).
std::set<std::string> cpu_flags();
// The "model name" of /proc/cpuinfo with its "cpu family" and "model" ("AMD EPYC, family 25 model 17"),
// or "unknown CPU".
std::string cpu_model();

// The CPU flags that name 16-bit instructions, in this order (the others are checked too): avx512_bf16
// (bf16 conversions and a bf16 dot product into fp32), amx_bf16 (bf16 tile matmuls), avx512_fp16 (fp16
// vector arithmetic), amx_fp16 (fp16 tile matmuls).
inline const std::vector<std::string>& native_16bit_flags() {
  static const std::vector<std::string> flags = {"avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16"};
  return flags;
}

// The device a lab ran on, as far as 16-bit arithmetic goes. Filled from the machine by
// `hardware_of`; tests build one by hand to check the wording for machines that are not here.
struct Hardware {
  bool cuda = false;
  std::string name;                 // "AMD EPYC, family 25 model 17", "NVIDIA H200 (sm_90)"
  int compute_capability = 0;       // CUDA: major*10+minor
  std::set<std::string> cpu_flags;  // CPU: /proc/cpuinfo flags (empty: unknown)
};
Hardware hardware_of(torch::Device device);

// The 16-bit flags among `hw.cpu_flags` ("avx512_bf16, amx_bf16"), or "" when none is listed.
std::string native_16bit_units(const Hardware& hw);

// The 16-bit flags that `hw.cpu_flags` lacks ("amx_bf16, avx512_fp16 or amx_fp16"), or "".
std::string missing_16bit_units(const Hardware& hw);

// "a CPU (AMD EPYC) whose /proc/cpuinfo lists 16-bit instructions (avx512_bf16, which converts to bf16 and
// adds bf16 products into fp32) and not amx_bf16, avx512_fp16 or amx_fp16",
// "a CPU (...) whose /proc/cpuinfo lists no 16-bit instructions (none of avx512_bf16, ...)",
// "a GPU (NVIDIA H200 (sm_90)) with fp16 and bf16 Tensor Cores", "a GPU (...) with fp16 Tensor Cores
// and no bf16". Reads as the object of "on": "ran at 0.8x the speed of fp32 on <this>".
std::string describe_16bit_hardware(const Hardware& hw);

// Whether ATen hands CPU matmuls of `dtype` (bf16 or fp16) to oneDNN on this machine, as ATen itself
// decides it: torch.ops.mkldnn._is_mkldnn_bf16_supported() / _is_mkldnn_fp16_supported(), oneDNN's check
// of the CPU's instruction set (bf16: avx512bw/vl/dq or avx_ne_convert; fp16: avx512_fp16 or
// avx_ne_convert). nullopt when this LibTorch has no such op (built without oneDNN) or for another dtype.
std::optional<bool> onednn_supports(torch::ScalarType dtype);

// Which kernel a 16-bit at::matmul (larger than 16x16x16) runs on `device`, following ATen's dispatch
// (aten/src/ATen/native/CPUBlas.cpp): on the CPU oneDNN's matmul where onednn_supports(dtype), else ATen's
// own gemm kernel (aten/src/ATen/native/cpu/BlasKernel.cpp); on CUDA cuBLAS. Words for a report:
// "ATen's own CPU fp16 gemm (oneDNN: no fp16 support here)".
struct MatmulKernel {
  enum Kind { AtenCpu, OneDnn, Cublas } kind = AtenCpu;
  std::string text;
};
MatmulKernel matmul_kernel(torch::Device device, torch::ScalarType dtype);

}  // namespace lab
