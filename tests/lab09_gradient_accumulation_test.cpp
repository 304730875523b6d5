// Lab 09 (gradient-accumulation, Q9), beyond tests/test_labs.cpp: what update() after every micro-batch
// does to one batch, measured, and what the flipped loop does to the scale in training.
#include <doctest/doctest.h>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab09_gradient_accumulation_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("gradient-accumulation", torch::kHalf, flip);
}

}  // namespace

TEST_CASE(
    "update() after every micro-batch: refused alone, with a step, four steps and the same miss in fp32 "
    "and fp16 while the scale stays put") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(check_keyed(r, "update-each-not-the-scale").passed);
  CHECK(r.value("update_alone_refused") == 1);
  CHECK(r.value("each_step_steps") == r.value("micro_batches"));
  CHECK(r.value("each_step_scale_changes") == 0);
  CHECK(r.value("each_step_vs_whole_fp16") ==
        doctest::Approx(r.value("each_step_vs_whole_fp32")).epsilon(0.1));
  // The extra steps do it: four separate steps (nothing mixed in .grad) miss by as much.
  CHECK(r.value("separate_steps_vs_whole") ==
        doctest::Approx(r.value("each_step_vs_whole_fp32")).epsilon(0.1));
  // An unscale_ each time divides .grad again and again: the one step is a tiny fraction of the whole's.
  CHECK(r.value("each_unscale_size") < 0.01);
}

TEST_CASE("the recipe's scale moves between batches only, flipped it moves inside them too") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("scale_changes_mid_batch") == 0);
  CHECK(r.value("scale_changes_at_boundaries") >= 1);
  CHECK(r.value("skipped_steps") >= 1);  // the scale really started too high and backed off
  const lab::Report flipped = run_quick(/*flip=*/true);
  CHECK(flipped.value("scale_changes_mid_batch") >= 1);
  CHECK(flipped.value("accum_vs_whole_fp32") > 1e-3);  // 100x past fp32 rounding
}

}  // namespace lab09_gradient_accumulation_test
