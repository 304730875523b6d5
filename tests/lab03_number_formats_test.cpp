// Lab 03 (number-formats): bf16 has fp32's range in 16 bits; fp16 has more mantissa bits.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("number-formats", dtype, flip);
}

}  // namespace

TEST_CASE("the number-formats lab is registered for question 3") {
  const lab::LabInfo* info = lab::find_lab("3");
  REQUIRE(info != nullptr);
  CHECK(info->id == "number-formats");
}

TEST_CASE("bf16 reaches fp32's range while fp16 stops at 65504, whatever --dtype says") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.checks().size() == 5);
    CHECK(r.value("fp16_max") == doctest::Approx(65504));
    CHECK(r.value("bf16_max") == doctest::Approx(3.3895e38).epsilon(1e-3));
    CHECK(r.value("bf16_min_normal") == doctest::Approx(std::ldexp(1.0, -126)));
    CHECK(r.value("fp16_min_subnormal") == doctest::Approx(std::ldexp(1.0, -24)));
    CHECK(r.value("fp16_mantissa_bits") == 10);
    CHECK(r.value("bf16_mantissa_bits") == 7);
    CHECK(r.value("bf16_epsilon") == doctest::Approx(std::ldexp(1.0, -7)));
    CHECK(r.value("bf16_exponent_bits") == 8);
    CHECK(r.value("bf16_top_half_share") == 100.0);  // percent: every bf16 pattern is fp32's top half
  }
}

TEST_CASE("round-trips through tensor casts keep 70000 and 1e-8 in bf16 and 1 + 2^-8 in fp16") {
  CAPTURE("fp16 flushes at 2^-25: the tie rounds to even (0), just above it rounds up to 2^-24");
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(r.value("big_as_bf16") == doctest::Approx(70144));  // the nearest bf16 to 70000
  CHECK(r.value("tiny_as_bf16") == doctest::Approx(1e-8).epsilon(0.01));
  CHECK(r.value("one_plus_as_fp16") == doctest::Approx(1.0 + 1.0 / 256));
  CHECK(r.value("half_sub_as_fp16") == 0.0);
  CHECK(r.value("above_half_sub_as_fp16") == std::ldexp(1.0, -24));
}

TEST_CASE("with --flip (fp16 in bf16's place) the range and round-trip checks fail") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK_FALSE(r.passed());
  for (const char* claim : {"bf16's max and smallest normal", "top half of an fp32", "70000 overflows", "1e-8 and 2^-25",
                            "1 + 2^-8 is lost"}) {
    const lab::Check* c = find_check(r, claim);
    REQUIRE(c != nullptr);
    CHECK_FALSE(c->passed);
  }
  CHECK(r.value("bf16_exponent_bits") == 5);  // measured from fp16's patterns in bf16's place
  CHECK(r.value("bf16_top_half_share") < 50.0);
}

TEST_CASE("every observation the lab promises to the quiz is reported") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  const lab::LabInfo* info = lab::find_lab("number-formats");
  REQUIRE(info != nullptr);
  REQUIRE_FALSE(info->provides.empty());
  for (const auto& key : info->provides) CHECK_MESSAGE(r.find(key) != nullptr, key);
}
