// Lab 05 (memory-throughput), beyond tests/test_labs.cpp: the bytes of the run's real tensors, the
// allocator measurements they are checked against, speed measured but never asserted, and the device
// description the quiz cites, which must read right on machines that are not this one.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab_test_support.h"

namespace lab05_memory_throughput_test {

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("memory-throughput", dtype, flip);
}

bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

}  // namespace

TEST_CASE(
    "16-bit halves the weights and what the forward keeps, the master copy adds 4 B and Adam 8 B a "
    "parameter") {
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.value("weight_bytes_ratio") == 0.5);
    CHECK(r.value("activation_bytes_ratio") == 0.5);  // measured by the counting CPU allocator
    CHECK(r.value("master_bytes_per_param") == 4.0);
    CHECK(r.value("adam_bytes_per_param") == 8.0);
    CHECK(r.value("grad_bytes_per_param_autocast") == 4.0);  // gradients are still computed, in fp32
    CHECK(r.value("state_bytes_per_param_16bit") == 16.0);   // 2 + 2 + 4 + 8
    CHECK(r.value("state_bytes_per_param_fp32") == 16.0);    // 4 + 4 + 8
    // Autocast's forward keeps its 16-bit weight copies: more than fp32 at a small batch.
    CHECK(r.value("autocast_kept_by_batch") > 1.1);
    CHECK(r.value("output_error_ratio") > 10);
    // 16-bit weights with an fp32 master copy: the step's peak passes fp32's (Q5 says so), though the
    // weights are half the bytes, because the step holds fp32 copies of the 16-bit gradients for Adam.
    CHECK(r.value("master_peak_ratio") > 1.1);
    // Speed is measured, not asserted: the ratios only have to be real measurements.
    for (const char* key :
         {"mlp_bf16_vs_fp32", "mlp_fp16_vs_fp32", "mlp_16bit_vs_fp32", "matmul_bf16_vs_fp32",
          "matmul_fp16_vs_fp32", "matmul_bf16_via_fp32_vs_fp32", "matmul_fp16_via_fp32_vs_fp32"}) {
      CHECK_MESSAGE(std::isfinite(r.value(key)), key);
      CHECK_MESSAGE(r.value(key) > 0, key);
    }
    // The quiz's "16-bit step" is the one --dtype names.
    CHECK(contains(r.find("mlp_16bit_vs_fp32")->text, "autocast " + lab::short_name(dtype)));
  }
}

TEST_CASE("allocated_bytes counts what the CPU allocator hands out during the call, peak and still live") {
  torch::Tensor kept;
  const lab::AllocatedBytes b = lab::allocated_bytes(torch::kCPU, [&] {
    kept = torch::empty({1000}, torch::kFloat);                      // 4000 B, still live at the end
    const torch::Tensor temp = torch::empty({500}, torch::kDouble);  // 4000 B, freed before the end
  });
  CHECK(b.retained == 4000);
  CHECK(b.peak == 8000);
  kept = torch::Tensor();  // freed after the call: counts against no later call
  const lab::AllocatedBytes none = lab::allocated_bytes(torch::kCPU, [] {});
  CHECK(none.peak == 0);
  CHECK(none.retained == 0);
}

TEST_CASE("the report names this device's 16-bit hardware, read from /proc/cpuinfo on a CPU") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  const std::string text = r.find("hardware_16bit")->text;
  CHECK(contains(text, "a CPU (" + lab::cpu_model() + ")"));
  const lab::Hardware here = lab::hardware_of(torch::kCPU);
  CHECK(r.value("hardware_16bit") == (lab::native_16bit_units(here).empty() ? 0.0 : 1.0));
  for (auto t : {torch::kBFloat16, torch::kHalf})
    CHECK(contains(r.render_text(),
                   lab::short_name(t) + " at::matmul here: " + lab::matmul_kernel(torch::kCPU, t).text));
}

TEST_CASE("the device description reads right on a CPU with or without native 16-bit units and on GPUs") {
  lab::Hardware cpu{.cuda = false, .name = "Xeon", .compute_capability = 0, .cpu_flags = {"avx2", "f16c"}};
  CHECK(lab::describe_16bit_hardware(cpu) ==
        "a CPU (Xeon) whose /proc/cpuinfo lists no 16-bit instructions (none of avx512_bf16, amx_bf16, "
        "avx512_fp16, amx_fp16)");
  cpu.cpu_flags = {"avx2", "avx512_bf16", "amx_bf16", "amx_tile"};
  CHECK(lab::native_16bit_units(cpu) == "avx512_bf16, amx_bf16");
  CHECK(lab::describe_16bit_hardware(cpu) ==
        "a CPU (Xeon) whose /proc/cpuinfo lists 16-bit instructions (avx512_bf16, amx_bf16; avx512_bf16 "
        "converts to bf16 and adds bf16 products into fp32) and not avx512_fp16 or amx_fp16");
  cpu.cpu_flags = {"avx512_bf16"};  // this machine's kind: an AMD EPYC without AMX
  CHECK(lab::describe_16bit_hardware(cpu) ==
        "a CPU (Xeon) whose /proc/cpuinfo lists 16-bit instructions (avx512_bf16, which converts to bf16 and "
        "adds bf16 products into fp32) and not amx_bf16, avx512_fp16 or amx_fp16");
  cpu.cpu_flags = {"avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16"};
  CHECK(lab::missing_16bit_units(cpu).empty());
  cpu.cpu_flags = {};
  CHECK(contains(lab::describe_16bit_hardware(cpu), "could not be read"));
  lab::Hardware gpu{.cuda = true, .name = "NVIDIA H200 (sm_90)", .compute_capability = 90, .cpu_flags = {}};
  CHECK(lab::describe_16bit_hardware(gpu) == "a GPU (NVIDIA H200 (sm_90)) with fp16 and bf16 Tensor Cores");
  gpu = {.cuda = true, .name = "Tesla T4 (sm_75)", .compute_capability = 75, .cpu_flags = {}};
  CHECK(lab::describe_16bit_hardware(gpu) == "a GPU (Tesla T4 (sm_75)) with fp16 Tensor Cores and no bf16");
  gpu.compute_capability = 61;
  CHECK(contains(lab::describe_16bit_hardware(gpu), "without Tensor Cores"));
}

TEST_CASE("the 16-bit matmul is timed both through its own kernel and converted to fp32 and back") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  const std::string text = r.render_text();
  CHECK(contains(text, "bf16 mm (bf16 kernel)"));
  CHECK(contains(text, "bf16 via fp32 (convert, mm, back)"));
  CHECK(contains(text, "fp16 via fp32 (convert, mm, back)"));
  CHECK(contains(text, "peak of one step (allocator)"));
}

TEST_CASE("with --flip (the 16-bit tensors kept in fp32) the bytes are fp32's") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK(r.value("weight_bytes_ratio") == 1.0);
  CHECK(r.value("activation_bytes_ratio") == 1.0);
  CHECK(r.value("autocast_kept_by_batch") == 1.0);
  CHECK(r.value("output_error_ratio") == doctest::Approx(1.0));
  CHECK(r.value("adam_bytes_per_param") == 8.0);  // Adam's state is fp32 either way
}

}  // namespace lab05_memory_throughput_test
