#include "runner/info.h"

#include <ostream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>
#include <torch/version.h>

#include "amp/device_caps.h"
#include "lab/hardware.h"

namespace runner {
namespace {

// A value from LibTorch's build summary: "CPU capability usage: AVX2", "USE_CUDA=0, ".
std::string build_setting(const std::string& key, const std::string& terminators) {
  static const std::string config = at::show_config();
  const auto pos = config.find(key);
  if (pos == std::string::npos) return "unknown";
  const auto end = config.find_first_of(terminators, pos + key.size());
  return config.substr(pos + key.size(), end - pos - key.size());
}

}  // namespace

std::string libtorch_build() {
  const std::string use_cuda = build_setting("USE_CUDA=", ",\n");
  return fmt::format("{} ({} build)", TORCH_VERSION,
                     use_cuda == "0" || use_cuda == "OFF" ? "CPU-only" : "CUDA");
}

void print_info(std::ostream& out) {
  out << fmt::format("LibTorch        {}, {} intra-op threads\n", libtorch_build(), at::get_num_threads());
  out << fmt::format("CPU             {} · LibTorch kernels use {}\n", lab::cpu_model(),
                     build_setting("CPU capability usage: ", "\n"));
  const auto flags = lab::cpu_flags();
  const std::pair<const char*, const char*> features[] = {{"avx512_bf16", "bf16 dot products (AVX-512 BF16)"},
                                                          {"amx_bf16", "bf16 matrix tiles (AMX)"},
                                                          {"amx_fp16", "fp16 matrix tiles (AMX-FP16)"},
                                                          {"avx512_fp16", "fp16 arithmetic (AVX-512 FP16)"},
                                                          {"f16c", "fp16 <-> fp32 conversion (F16C)"},
                                                          {"avx512f", "AVX-512"},
                                                          {"avx2", "AVX2"}};
  for (const auto& [flag, what] : features)
    out << fmt::format("  {:<12}  {:<3}  {}\n", flag, flags.count(flag) ? "yes" : "no", what);
  if (!flags.count("avx512_bf16") && !flags.count("amx_bf16"))
    out << "  -> no bf16 instructions (avx512_bf16, AMX-BF16): bf16 matmuls on this CPU are computed by "
           "converting to fp32 and may be slower than fp32\n";
  if (amp::cuda_available()) {
    const int cc = amp::cuda_compute_capability();
    out << fmt::format("CUDA            {} · compute capability {}.{} · bf16 {}\n", amp::cuda_device_name(),
                       cc / 10, cc % 10,
                       amp::cuda_supports_bf16_natively() ? "native"
                       : amp::cuda_supports_bf16()        ? "emulated (native needs 8.0+)"
                                                          : "not supported");
  } else {
    out << "CUDA            no CUDA device available (labs run on the CPU)\n";
  }
}

}  // namespace runner
