// Lab 10 (gradient-penalty, Q10), beyond tests/test_labs.cpp: the factor the returned gradients carry, and
// what the question's other answers do.
#include <doctest/doctest.h>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab10_gradient_penalty_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("gradient-penalty", torch::kHalf, flip);
}

}  // namespace

TEST_CASE(
    "the returned gradients carry the scale, update() neither runs without an inf check nor touches them") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("penalty_ratio_scaled_grads") == doctest::Approx(r.value("init_scale")).epsilon(0.01));
  CHECK(r.value("penalty_ratio") == doctest::Approx(1.0).epsilon(0.01));
  CHECK(r.value("update_refused") == 1);
  CHECK(r.value("returned_unchanged") == 1);
  CHECK(r.value("fp16_cast_overflow") == 1);
  CHECK(r.value("scaled_sum_sq") > 65504);
  CHECK(r.value("penalty_dtype") == 32);  // under fp16 autocast the penalty's arithmetic is fp32
}

TEST_CASE("flipped, the penalty from the scaled gradients is off by the scale") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK(r.value("penalty_ratio") == doctest::Approx(r.value("init_scale")).epsilon(0.01));
}

TEST_CASE(
    "on the small-gradient batch fp16 loses every unscaled gradient and the scaled penalty keeps float64's") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("tiny_unscaled_zeroed") == 100);  // percent: autograd::grad of the loss itself, in fp16
  CHECK(r.value("tiny_unscaled_ratio") == 0);
  CHECK(r.value("tiny_penalty_ratio") == doctest::Approx(1.0).epsilon(0.10));
}

}  // namespace lab10_gradient_penalty_test
