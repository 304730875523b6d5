// Lab 10 (gradient-penalty, Q10): gradients of a scaled loss must be unscaled by hand before a penalty.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("gradient-penalty", torch::kHalf, flip); }

}  // namespace

TEST_CASE("unscaled by hand, the fp16 penalty matches float64's and training matches fp32") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("penalty_ratio") == doctest::Approx(1.0).epsilon(0.01));
  CHECK(r.value("penalty_ratio_scaled_grads") == doctest::Approx(r.value("init_scale")).epsilon(0.01));
  CHECK(r.value("loss_ratio_fp16") == doctest::Approx(1.0).epsilon(0.05));
  CHECK(r.value("trained") < 1.0);
}

TEST_CASE("flipped, the penalty from scaled gradients is off by the scale and training goes wrong") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "from unscaled gradients").passed);
  CHECK_FALSE(check_about(r, "fp16 training with the penalty").passed);
  CHECK(r.value("penalty_ratio") == doctest::Approx(r.value("init_scale")).epsilon(0.01));
}
