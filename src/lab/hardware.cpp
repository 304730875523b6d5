#include "lab/hardware.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include <ATen/core/dispatch/Dispatcher.h>

#include "amp/device_caps.h"
#include "lab/context.h"

namespace lab {

std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    }
  }
  return {};
}

std::string cpu_model() {
  // The first processor's lines; "model name" alone does not tell one generation from another (a KVM
  // guest's "AMD EPYC" is family 25 on one machine and 26 on another, with other 16-bit speeds).
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model;
  while (std::getline(in, line) && !(line.empty() && !name.empty())) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") name = value;
    if (key == "cpu family") family = value;
    if (key == "model") model = value;
  }
  if (name.empty()) return "unknown CPU";
  return family.empty() || model.empty() ? name : name + ", family " + family + " model " + model;
}

Hardware hardware_of(torch::Device device) {
  Hardware hw;
  hw.cuda = device.is_cuda();
  if (hw.cuda) {
    hw.name = amp::cuda_device_name();
    hw.compute_capability = amp::cuda_compute_capability();
  } else {
    hw.name = cpu_model();
    hw.cpu_flags = cpu_flags();
  }
  return hw;
}

std::string native_16bit_units(const Hardware& hw) {
  std::string found;
  for (const auto& f : native_16bit_flags())
    if (hw.cpu_flags.count(f)) found += (found.empty() ? "" : ", ") + f;
  return found;
}

std::string describe_16bit_hardware(const Hardware& hw) {
  if (hw.cuda) {
    // Tensor Cores: fp16 from compute capability 7.0 (Volta), bf16 from 8.0 (Ampere).
    const std::string gpu = "a GPU (" + hw.name + ")";
    if (hw.compute_capability >= 80) return gpu + " with fp16 and bf16 Tensor Cores";
    if (hw.compute_capability >= 70) return gpu + " with fp16 Tensor Cores and no bf16";
    if (hw.compute_capability > 0) return gpu + " without Tensor Cores and without bf16";
    return gpu + " whose compute capability this build cannot read";
  }
  const std::string cpu = "a CPU (" + hw.name + ")";
  if (hw.cpu_flags.empty()) return cpu + " whose features could not be read";
  const std::string units = native_16bit_units(hw);
  if (units.empty()) {
    std::string all;
    for (const auto& f : native_16bit_flags()) all += (all.empty() ? "" : ", ") + f;
    return cpu + " whose /proc/cpuinfo lists no 16-bit instructions (none of " + all + ")";
  }
  // avx512_bf16 is conversions to bf16 and a bf16 dot product that accumulates in fp32 (VDPBF16PS), not
  // general bf16 arithmetic; the report says so where it names the flag.
  const std::string missing = missing_16bit_units(hw);
  const bool avx512_bf16 = hw.cpu_flags.count("avx512_bf16") > 0;
  const std::string gloss = units == "avx512_bf16"
                                ? ", which converts to bf16 and adds bf16 products into fp32"
                            : avx512_bf16 ? "; avx512_bf16 converts to bf16 and adds bf16 products into fp32"
                                          : "";
  return cpu + " whose /proc/cpuinfo lists 16-bit instructions (" + units + gloss + ")" +
         (missing.empty() ? "" : " and not " + missing);
}

std::string missing_16bit_units(const Hardware& hw) {
  std::vector<std::string> missing;
  for (const auto& f : native_16bit_flags())
    if (!hw.cpu_flags.count(f)) missing.push_back(f);
  std::string out;
  for (size_t i = 0; i < missing.size(); ++i)
    out += (i == 0 ? "" : i + 1 == missing.size() ? " or " : ", ") + missing[i];
  return out;
}

std::optional<bool> onednn_supports(torch::ScalarType dtype) {
  const char* op = dtype == torch::kBFloat16 ? "mkldnn::_is_mkldnn_bf16_supported"
                   : dtype == torch::kHalf   ? "mkldnn::_is_mkldnn_fp16_supported"
                                             : nullptr;
  if (!op) return std::nullopt;
  const auto schema = c10::Dispatcher::singleton().findSchema({op, ""});
  if (!schema) return std::nullopt;
  return schema->typed<bool()>().call();
}

MatmulKernel matmul_kernel(torch::Device device, torch::ScalarType dtype) {
  const std::string t = short_name(dtype);
  if (device.is_cuda())
    return {MatmulKernel::Cublas, "cuBLAS's " + t + " GEMM (" + amp::cuda_device_name() + ")"};
  const std::optional<bool> onednn = onednn_supports(dtype);
  if (onednn.value_or(false))
    return {MatmulKernel::OneDnn, "oneDNN's " + t + " matmul (oneDNN: " + t + " supported here)"};
  return {MatmulKernel::AtenCpu,
          "ATen's own CPU " + t + " gemm (" +
              (onednn ? "oneDNN: no " + t + " support here" : std::string("no oneDNN in this LibTorch")) +
              ")"};
}

}  // namespace lab
