// Lab 04 (fp32-accumulation), beyond tests/test_labs.cpp: the numbers the explanation cites, the kernel the
// report names, and the cuBLAS switches skipped (visibly) on the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab04_fp32_accumulation_test {

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("fp32-accumulation", dtype, flip);
}

bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

}  // namespace

TEST_CASE(
    "fp16 accumulation drifts far from float64 while fp32 accumulation and the CPU's fp16 matmul do not") {
  const auto r = run_quick(torch::kHalf, /*flip=*/false);
  CHECK(r.value("k_min") == 256);
  CHECK(r.value("k_max") == 4096);
  CHECK(r.value("block_size") == 32);
  // (b) and (c) carry only the rounding of inputs and result: about 2^-12 relative, well under 1e-3.
  CHECK(r.value("err_fp32_acc_kmax") < 1e-3);
  CHECK(r.value("err_matmul_kmax") < 1e-3);
  CHECK(r.value("err_matmul_kmax") == doctest::Approx(r.value("err_fp32_acc_kmax")).epsilon(0.5));
  CHECK(r.value("matmul_vs_fp32_acc") <= 1.5);
  CHECK(r.value("err_fp16_acc_kmax") > 5 * r.value("err_fp16_acc_kmin"));
  CHECK(r.value("fp16_acc_penalty_kmax") >= 100);
  CHECK(r.value("err_blocked_kmax") < r.value("err_fp16_acc_kmax"));
  CHECK(r.value("err_blocked_kmax") >= 3 * r.value("err_fp32_acc_kmax"));
  // fp16's running sum of 0.01s stops at 32: half its step there (2^-6) exceeds 0.01.
  CHECK(r.value("stall_sum_fp16") == doctest::Approx(32).epsilon(0.02));
  // 10000 adds of fp16(0.01) = 0.010002136: exactly 100.02136.
  CHECK(r.value("stall_sum_fp32") == doctest::Approx(100.02136).epsilon(1e-3));
  CHECK(r.find("stall_terms")->text == "10000 x 0.01");
}

TEST_CASE("the report names the CPU kernel ATen picks for an fp16 matmul and skips the cuBLAS switches") {
  const auto r = run_quick(torch::kHalf, /*flip=*/false);
  const lab::MatmulKernel kernel = lab::matmul_kernel(torch::kCPU, torch::kHalf);
  CHECK(r.find("matmul_kernel")->text == kernel.text);
  CHECK(r.value("matmul_kernel") == static_cast<double>(kernel.kind));
  const std::optional<bool> onednn = lab::onednn_supports(torch::kHalf);
  REQUIRE(onednn.has_value());  // the pinned LibTorch is built with oneDNN
  CHECK(contains(kernel.text, *onednn ? "oneDNN's fp16 matmul" : "ATen's own CPU fp16 gemm"));
  CHECK(std::isnan(r.value("cublas_switches")));
  CHECK(contains(r.find("cublas_switches")->text, "not measured, since this run is on the CPU"));
  CHECK(contains(r.render_text(), "(c) at::matmul: " + kernel.text));
}

TEST_CASE("the inputs are fp16 whatever --dtype says, so bf16 gives the same numbers") {
  const auto fp16 = run_quick(torch::kHalf, /*flip=*/false),
             bf16 = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(bf16.passed());
  CHECK(bf16.value("err_fp16_acc_kmax") == fp16.value("err_fp16_acc_kmax"));
  CHECK(bf16.value("err_matmul_kmax") == fp16.value("err_matmul_kmax"));
}

TEST_CASE(
    "with --flip the 'fp32' running sum is fp16 and stalls too, and the fp16 sum's growth still shows") {
  const auto r = run_quick(torch::kHalf, /*flip=*/true);
  CHECK(r.value("stall_sum_fp32") == doctest::Approx(32).epsilon(0.02));
  CHECK(r.value("err_fp32_acc_kmax") == r.value("err_fp16_acc_kmax"));
  CHECK(check_keyed(r, "fp16-error-grows").passed);
  CHECK_FALSE(check_keyed(r, "matmul-matches-fp32-sum").passed);
}

}  // namespace lab04_fp32_accumulation_test
