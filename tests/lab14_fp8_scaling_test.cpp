// Lab 14 (fp8-scaling, Q14): FP8 training needs a scale per tensor; delayed scaling trains like bf16.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("fp8-scaling", torch::kBFloat16, flip); }

}  // namespace

TEST_CASE("unscaled FP8 flushes the small gradients to zero and a per-tensor scale keeps them") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("grad_flushed_unscaled") >= 50.0);  // percent
  CHECK(r.value("grad_flushed_scaled") <= 5.0);
  CHECK(check_about(r, "bit patterns decode").passed);
}

TEST_CASE("FP8 without scales fails to train, with delayed or current scaling it lands near bf16") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("loss_ratio_fp8_unscaled") >= 1.5);
  CHECK(r.value("loss_ratio_fp8_delayed") == doctest::Approx(1.0).epsilon(0.25));
  CHECK(r.value("loss_ratio_fp8_current") == doctest::Approx(1.0).epsilon(0.25));
  CHECK(r.value("loss_ratio_fp32") == doctest::Approx(1.0).epsilon(0.10));
}

TEST_CASE("flipped, the scales are dropped and delayed scaling trains like no scaling: its check fails") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "delayed per-tensor scaling").passed);
  CHECK(check_about(r, "without scales fails").passed);
  CHECK(r.value("loss_ratio_fp8_delayed") == doctest::Approx(r.value("loss_ratio_fp8_unscaled")));
}
