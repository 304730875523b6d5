// Lab 11 (multiple-optimizers, Q11), beyond tests/test_labs.cpp: the numbers of the three loops.
#include <doctest/doctest.h>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab11_multiple_optimizers_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("multiple-optimizers", torch::kHalf, flip);
}

}  // namespace

TEST_CASE("one update: each model's inf skips its own optimizer once and halves the scale once") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("skipped_opt0") == 1);  // at model 0's inf
  CHECK(r.value("skipped_opt1") == 0);
  CHECK(r.value("skips_total") == 2);  // and optimizer 1 at model 1's
  CHECK(r.value("skips_missed") == 0);
  CHECK(r.value("flags_wrong") == 0);
  CHECK(r.value("backoffs") == 2);
  CHECK(r.value("scale_after") == doctest::Approx(0.5 * r.value("scale_before")));
  CHECK(r.value("grad_error_after_m1") <= 0.02);
}

TEST_CASE(
    "update after each step is accepted and silently mis-unscales optimizer 1, a scaler each mixes scales") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("two_updates_raised") == 0);
  CHECK(r.value("two_updates_factor_inf") == 2.0);                  // 1 / backoff_factor, exactly
  CHECK(r.value("two_updates_factor_growth") == 0.5);               // 1 / growth_factor, exactly
  CHECK(r.value("growths_two_updates") > r.value("growths_main"));  // two updates counted per step
  CHECK(r.value("update_alone_refused") == 1);
  CHECK(r.value("per_scaler_grad_error") > 0.1);
  CHECK(r.value("per_scaler_scale_ratio") != 1.0);
}

}  // namespace lab11_multiple_optimizers_test
