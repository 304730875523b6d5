// Lab 04 (fp32-accumulation): fp32 accumulation keeps long fp16 dot products accurate.
#include <doctest/doctest.h>

#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("fp32-accumulation", dtype, flip);
}

}  // namespace

TEST_CASE("the fp32-accumulation lab is registered for question 4") {
  const lab::LabInfo* info = lab::find_lab("4");
  REQUIRE(info != nullptr);
  CHECK(info->id == "fp32-accumulation");
}

TEST_CASE("fp16 accumulation drifts far from float64 while fp32 accumulation and fp16 matmul do not") {
  const auto r = run_quick(torch::kHalf, /*flip=*/false);
  CHECK(r.passed());
  CHECK(r.checks().size() == 5);
  CHECK(r.value("k_max") == 4096);
  // (b) and (c) carry only the rounding of inputs and result: about 2^-12 relative, well under 1e-3.
  CHECK(r.value("err_fp32_acc_kmax") < 1e-3);
  CHECK(r.value("err_matmul_kmax") < 1e-3);
  CHECK(r.value("err_matmul_kmax") == doctest::Approx(r.value("err_fp32_acc_kmax")).epsilon(0.5));
  CHECK(r.value("err_fp16_acc_kmax") > 5 * r.value("err_fp16_acc_kmin"));
  CHECK(r.value("fp16_acc_penalty_kmax") >= 100);
  // Blocked fp16 accumulation (partial sums of 32) sits between sequential fp16 and fp32.
  CHECK(r.value("err_blocked_kmax") < r.value("err_fp16_acc_kmax"));
  CHECK(r.value("err_blocked_kmax") >= 3 * r.value("err_fp32_acc_kmax"));
  CHECK(check_about(r, "blocked fp16 accumulation").passed);
  // fp16's running sum of 0.01s stops at 32: half its step there (2^-6) exceeds 0.01.
  CHECK(r.value("stall_sum_fp16") == doctest::Approx(32).epsilon(0.02));
  // 10000 adds of fp16(0.01) = 0.010002136: exactly 100.02136.
  CHECK(r.value("stall_sum_fp32") == doctest::Approx(100.02136).epsilon(1e-3));
}

TEST_CASE("the inputs are fp16 whatever --dtype says, so bf16 gives the same verdict") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(r.passed());
}

TEST_CASE("with --flip ((b) accumulates in fp16 too) the fp32-accumulation checks fail") {
  const auto r = run_quick(torch::kHalf, /*flip=*/true);
  CHECK_FALSE(r.passed());
  for (const char* claim : {"fp16 at::matmul's error matches", "both are far below", "blocked fp16 accumulation",
                            "a running fp16 sum"}) {
    const lab::Check* c = find_check(r, claim);
    REQUIRE(c != nullptr);
    CHECK_FALSE(c->passed);
  }
  CHECK(r.value("stall_sum_fp32") == doctest::Approx(32).epsilon(0.02));
}

TEST_CASE("every observation the lab promises to the quiz is reported") {
  const auto r = run_quick(torch::kHalf, /*flip=*/false);
  const lab::LabInfo* info = lab::find_lab("fp32-accumulation");
  REQUIRE(info != nullptr);
  REQUIRE_FALSE(info->provides.empty());
  for (const auto& key : info->provides) CHECK_MESSAGE(r.find(key) != nullptr, key);
}
