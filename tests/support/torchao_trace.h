// A Python reference's side of a parity test (torchao, mmaemu): a script of tests/parity/ run once with the
// configured Python, its JSON read back, and the bit patterns it writes turned into tensors. Header-only:
// the LibTorch unit tests are one unit.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/libtorch.h"

namespace test_support {

// tests/parity/<script>.py's JSON for the CPU, the script run with the configured Python; nullopt, with the
// reason printed as a doctest skip ctest reports, when the Python or one of `modules` (a Python import list,
// "numpy, torchao") is missing or its torch is not the linked LibTorch's version; an empty JSON when the
// script failed (the caller reports it). `reference` names what goes uncompared, `needs` what is missing and
// `install` how to get it. Callers keep it in a static.
inline std::optional<nlohmann::json> run_python_trace(const std::string& script, const std::string& modules,
                                                      const std::string& reference, const std::string& needs,
                                                      const std::string& install) {
  const char* env = std::getenv("AMP_LAB_PYTHON");
  const std::string python = env && *env ? env : AMP_LAB_PYTHON;
  const std::string linked = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                             "." + std::to_string(TORCH_VERSION_PATCH);
  if (python.empty()) {
    std::cout << "SKIPPED: no Python configured (scripts/setup provides one); " << reference
              << " was not compared\n";
    return std::nullopt;
  }
  std::string probe;
  {
    const std::string cmd =
        "\"" + python + "\" -c 'import torch, " + modules + "; print(torch.__version__)' 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    char buf[256];
    while (pipe && fgets(buf, sizeof buf, pipe.get())) probe += buf;
  }
  if (probe.rfind(linked, 0) != 0) {
    std::cout << "SKIPPED: no " << needs << " with torch " << linked << " at '" << python << "' (" << install
              << "); " << reference << " was not compared\n";
    return std::nullopt;
  }
  const auto out = std::filesystem::path(AMP_LAB_BINARY_DIR) / ("parity_" + script + "_cpu.json");
  const std::string cmd = "\"" + python + "\" \"" AMP_LAB_SOURCE_DIR "/tests/parity/" + script + ".py\" \"" +
                          out.string() + "\" cpu >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return nlohmann::json();
  std::ifstream in(out);
  return nlohmann::json::parse(in);
}

// The same for a torchao trace (torchao 0.18.0 and numpy).
inline std::optional<nlohmann::json> run_torchao_trace(const std::string& script) {
  return run_python_trace(script, "numpy, torchao", "torchao", "torchao and numpy",
                          "pip install torchao==0.18.0 numpy");
}

// A list of bit patterns as a tensor of `dtype` (fp32 from int32, bf16 from int16, one-byte types from
// uint8).
inline torch::Tensor from_bits(const nlohmann::json& bits, torch::ScalarType dtype,
                               torch::IntArrayRef shape) {
  const auto ints = bits.get<std::vector<int64_t>>();
  const int64_t size = torch::elementSize(dtype);
  const auto int_type = size == 4 ? torch::kInt : size == 2 ? torch::kShort : torch::kByte;
  return torch::tensor(ints, torch::kLong).to(int_type).view(dtype).view(shape).clone();
}

}  // namespace test_support
