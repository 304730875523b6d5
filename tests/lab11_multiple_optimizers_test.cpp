// Lab 11 (multiple-optimizers, Q11): one scaler, a step per optimizer, one update per iteration.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("multiple-optimizers", torch::kHalf, flip); }

}  // namespace

TEST_CASE("an inf in one model's gradients skips only its optimizer and halves the shared scale once") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("skipped_opt0") == 0);
  CHECK(r.value("skipped_opt1") == 1);
  CHECK(r.value("backoffs") == 1);
  CHECK(r.value("scale_after") == doctest::Approx(0.5 * r.value("scale_before")));
  CHECK(r.value("final_scale_ratio") == doctest::Approx(1.0));
  CHECK(r.value("grad_error_after_m1") <= 0.02);
}

TEST_CASE("flipped, a scaler per optimizer lets the scales drift apart and the unscaled gradients go wrong") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "backed off once").passed);
  CHECK_FALSE(check_about(r, "still equal fp32").passed);
  CHECK(r.value("final_scale_ratio") == doctest::Approx(2.0));
  CHECK(r.value("grad_error_after_m1") > 0.1);
  CHECK(check_about(r, "skipped optimizer 1's step only").passed);  // the skip itself is per optimizer either way
}
