// Lab 15 (fp16-overflow, Q15), beyond what tests/test_labs.cpp holds every lab to: the scale's exact
// halving, what the watch reports about the op, and the guarded forward's cleanliness.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab15_fp16_overflow_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("fp16-overflow", torch::kHalf, flip);
}

const std::string& text_of(const lab::Report& r, const std::string& key) {
  return r.find(key)->text;
}

}  // namespace

TEST_CASE("unchanged, the scale halves on every step: 2^16 x 2^-steps, and no loss is finite") {
  const lab::Report r = run_quick(/*flip=*/false);
  const double steps = r.value("skipped_unfixed");
  CHECK(steps >= 10);
  CHECK(r.value("final_scale_unfixed") == std::ldexp(65536.0, -static_cast<int>(steps)));
  CHECK(r.value("finite_losses_unfixed") == 0);
  // The wrong options' runs: every step skipped, and clipping saw a NaN norm.
  CHECK(r.value("small_scale_skipped") == r.value("lower_lr_skipped"));
  CHECK(r.value("clip_skipped") == r.value("lower_lr_skipped"));
  CHECK(std::isnan(r.value("clip_norm")));
}

TEST_CASE("the watch names the fp16 scores matmul with its inputs, and nothing in the flipped forward") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(text_of(r, "op_name") == "aten::bmm");
  CHECK(text_of(r, "op_phase") == "forward");
  CHECK(text_of(r, "op_inputs") == "Half[32, 8, 16], Half[32, 16, 8]");
  CHECK(text_of(r, "op_within").find("aten::matmul") != std::string::npos);
  CHECK(r.value("op_max_abs") > 65504);
  const lab::Report flipped = run_quick(/*flip=*/true);
  // Flipped, the forward is finite; what the watch may still find is a backward overflow at the scale 2^16,
  // the scaler's ordinary business (it skips that step and backs off).
  CHECK(text_of(flipped, "op_phase") != "forward");
  CHECK(flipped.value("op_max_abs") < 65504);
}

TEST_CASE("the guarded forward makes no inf, and its scores are fp32's rounding of float64's") {
  const lab::Report r = run_quick(/*flip=*/false);
  const lab::Check* c = r.find_check("guarded-scores-fp32");
  REQUIRE(c != nullptr);
  CHECK(c->evidence.find("fp32 scores") == 0);
  CHECK(c->evidence.find("guarded forward: none") != std::string::npos);
  CHECK(r.value("scores_error_guarded") <= 1e-6);
  CHECK(r.value("scores_fp32_nonfinite") == 0);
}

TEST_CASE("both fixes make nearly all of fp32's loss reduction, and the output stays 16-bit in both runs") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("skipped_guarded") >= 1);  // the scale settles from 2^16: the backward overflows at first
  CHECK(r.value("gain_share_guarded") >= 0.8);
  CHECK(r.value("gain_share_bf16") >= 0.8);
  CHECK(r.value("loss_ratio_guarded_same_skips") == doctest::Approx(1.0).epsilon(0.2));
  const lab::Check* c = r.find_check("rest-in-16-bit");
  REQUIRE(c != nullptr);
  CHECK(c->evidence ==
        "guarded scores fp32; v: fp16 in the fp16 run, bf16 in the bf16 run; y: fp16 in the fp16 run, bf16 "
        "in the bf16 run");
}

}  // namespace lab15_fp16_overflow_test
