// Lab 05 (memory-throughput): 16-bit tensors take exactly half the bytes; the fp32 master copy costs
// 4 bytes per parameter; 16-bit is not more accurate. Speed is measured but never asserted.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("memory-throughput", dtype, flip);
}

}  // namespace

TEST_CASE("the memory-throughput lab is registered for question 5 and reports what it promises") {
  const lab::LabInfo* info = lab::find_lab("5");
  REQUIRE(info != nullptr);
  CHECK(info->id == "memory-throughput");
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  for (const auto& key : info->provides) CHECK_MESSAGE(r.find(key) != nullptr, key);
}

TEST_CASE("16-bit weights, gradients and activations take exactly half the bytes, in bf16 and fp16") {
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.checks().size() == 3);
    CHECK(r.value("weight_bytes_ratio") == 0.5);
    CHECK(r.value("activation_bytes_ratio") == 0.5);
    // Autocast keeps fp32 weights and adds 16-bit copies: it pays off only above some batch size.
    CHECK(r.value("autocast_breakeven_batch") > 0);
    // 16-bit rounding makes the output far less accurate than fp32's, not more.
    CHECK(r.value("output_error_ratio") > 10);
    // Speed is measured, not asserted: the ratios only have to be real measurements.
    for (const char* key : {"mlp_bf16_vs_fp32", "mlp_fp16_vs_fp32", "matmul_bf16_vs_fp32", "matmul_fp16_vs_fp32"}) {
      CHECK_MESSAGE(std::isfinite(r.value(key)), key);
      CHECK_MESSAGE(r.value(key) > 0, key);
    }
  }
}

TEST_CASE("with --flip (the 16-bit tensors kept in fp32) the half-the-bytes and master-copy checks fail") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK_FALSE(r.passed());
  for (const char* claim : {"take exactly half the bytes", "master copy costs 4 bytes per parameter",
                            "does not raise accuracy"}) {
    const lab::Check* c = find_check(r, claim);
    REQUIRE_MESSAGE(c != nullptr, claim);
    CHECK_MESSAGE(!c->passed, claim);
  }
  CHECK(r.value("weight_bytes_ratio") == 1.0);
  CHECK(r.value("activation_bytes_ratio") == 1.0);
  CHECK(r.value("output_error_ratio") == doctest::Approx(1.0));
}
