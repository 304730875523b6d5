// Lab 09 (gradient-accumulation, Q9): micro-batches accumulate scaled gradients; the scaler steps and
// updates once per effective batch.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("gradient-accumulation", torch::kHalf, flip); }

}  // namespace

TEST_CASE("accumulated micro-batches take the whole batch's step and the scale moves only between batches") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("accum_vs_whole_fp32") <= 1e-5);
  CHECK(r.value("accum_vs_whole_fp16") <= 3 * r.value("whole_error_fp16"));
  CHECK(r.value("scale_changes_mid_batch") == 0);
  CHECK(r.value("scale_changes_at_boundaries") >= 1);
  CHECK(r.value("skipped_steps") >= 1);  // the scale really started too high and backed off
}

TEST_CASE("flipped, stepping and updating after every micro-batch breaks both the step and the scale") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "in fp32, N micro-batches").passed);
  CHECK_FALSE(check_about(r, "under fp16 autocast").passed);
  CHECK_FALSE(check_about(r, "only between effective batches").passed);
  CHECK(r.value("scale_changes_mid_batch") >= 1);
  CHECK(r.value("accum_vs_whole_fp32") > 1e-3);  // 100x past fp32 rounding
}
