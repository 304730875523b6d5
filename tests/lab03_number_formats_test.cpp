// Lab 03 (number-formats), beyond what tests/test_labs.cpp holds every lab to: the limits and layouts
// measured, the round trips, how fp32 becomes bf16 (nearest even, not truncation), whatever --dtype says.
#include <doctest/doctest.h>

#include <cmath>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab03_number_formats_test {

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("number-formats", dtype, flip);
}

}  // namespace

TEST_CASE("bf16 reaches fp32's range while fp16 stops at 65504, whatever --dtype says") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.value("fp16_max") == 65504);
    CHECK(r.value("bf16_max") == doctest::Approx(3.3895e38).epsilon(1e-3));
    CHECK(r.value("bf16_min_normal") == std::ldexp(1.0, -126));
    CHECK(r.value("fp16_min_subnormal") == std::ldexp(1.0, -24));
    CHECK(r.value("fp16_total_bits") == 16);
    CHECK(r.value("bf16_total_bits") == 16);
    CHECK(r.value("fp16_exponent_bits") == 5);
    CHECK(r.value("bf16_exponent_bits") == 8);
    CHECK(r.value("fp16_mantissa_bits") == 10);
    CHECK(r.value("bf16_mantissa_bits") == 7);
    CHECK(r.value("bf16_epsilon") == std::ldexp(1.0, -7));
  }
}

TEST_CASE("round trips through tensor casts keep 70000 and 1e-8 in bf16 and 1 + 2^-8 in fp16") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(std::isinf(r.value("big_as_fp16")));
  CHECK(r.value("big_as_bf16") == 70144);  // the nearest bf16 to 70000
  CHECK(r.value("tiny_as_fp16") == 0.0);
  CHECK(r.value("tiny_as_bf16") == doctest::Approx(1e-8).epsilon(0.01));
  CHECK(r.value("half_sub_as_fp16") == 0.0);  // 2^-25: a tie, to even (0)
  CHECK(r.value("above_half_sub_as_fp16") == std::ldexp(1.0, -24));
  CHECK(r.value("one_plus_as_fp16") == 1.0 + 1.0 / 256);
  CHECK(r.value("one_plus_as_bf16") == 1.0);  // a bf16 tie between 1 and 1 + 2^-7: to even
}

TEST_CASE(
    "fp32 becomes bf16 by rounding to the nearest, ties to even: its top half only when bf16 holds it") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(check_keyed(r, "bf16-rounds-to-nearest-even").passed);
  CHECK(r.value("bf16_top_half_share") == 100.0);      // values bf16 holds: the top half
  CHECK(r.value("bf16_nearest_even_share") == 100.0);  // random fp32 values: the nearest even bf16
  CHECK(r.value("bf16_not_truncated_share") > 40.0);   // ... which is not the top half about half the time
  CHECK(r.value("bf16_not_truncated_share") < 60.0);
  CHECK(r.value("tie_up_as_bf16") == 1.0 + 1.0 / 64);  // 1 + 3 x 2^-8: up to the even 1 + 2^-6
}

TEST_CASE("with --flip (fp16 in bf16's place) the layout measured is fp16's") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK(r.value("bf16_exponent_bits") == 5);  // measured from fp16's patterns in bf16's place
  CHECK(r.value("bf16_top_half_share") < 50.0);
  CHECK(r.value("bf16_nearest_even_share") < 50.0);
}

}  // namespace lab03_number_formats_test
