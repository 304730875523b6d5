// Lab 06 (amp-api): one training step for fp32, bf16 and fp16; checkpoints resume bit for bit, and for
// fp16 only when the scaler's state is saved and restored too.
#include <doctest/doctest.h>

#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("amp-api", dtype, flip);
}

}  // namespace

TEST_CASE("the amp-api lab is registered for question 6") {
  const lab::LabInfo* info = lab::find_lab("6");
  REQUIRE(info != nullptr);
  CHECK(info->id == "amp-api");
}

TEST_CASE("the same step trains fp32, bf16 and fp16 alike, resumes bit for bit and refuses a second unscale_") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  CHECK(r.passed());
  CHECK(r.checks().size() == 3);
  CHECK(r.value("resumed_identical") == 3);
  CHECK(r.value("loss_spread") < 4.0);  // percent: the largest gap of bf16's or fp16's final loss to fp32's
  CHECK(r.value("fp16_resumed_identical") == 1);
  CHECK(r.value("final_loss_fp32") < 0.7 * r.value("initial_loss"));
  CHECK(r.value("second_unscale_refused") == 1);
  CHECK(r.value("scale_at_checkpoint") >= 65536.0);  // the fp16 scaler had state worth saving
  CHECK(r.render_text().find("unscale_() has already been called on this optimizer since the last update().") !=
        std::string::npos);
  CHECK(r.render_text().find("fp16 loss scale over the uninterrupted run") != std::string::npos);
}

TEST_CASE("the lab runs all three precisions whatever --dtype says, with the same results") {
  const auto bf16 = run_quick(torch::kBFloat16, /*flip=*/false);
  const auto fp16 = run_quick(torch::kHalf, /*flip=*/false);
  for (const char* key : {"final_loss_fp32", "loss_spread", "skipped_steps_fp16", "final_scale_fp16"}) {
    CAPTURE(key);
    CHECK(bf16.value(key) == fp16.value(key));
  }
}

TEST_CASE("dropping only the scaler's state (flip): fp32 and bf16 still resume bit for bit, fp16 does not") {
  const auto r = run_quick(torch::kHalf, /*flip=*/true);
  CHECK_FALSE(r.passed());
  const lab::Check* resume = find_check(r, "resuming from model, optimizer and scaler state");
  const lab::Check* train = find_check(r, "all precisions train");
  const lab::Check* unscale = find_check(r, "second unscale_");
  REQUIRE(resume != nullptr);
  REQUIRE(train != nullptr);
  REQUIRE(unscale != nullptr);
  CHECK_FALSE(resume->passed);
  CHECK(train->passed);    // the uninterrupted runs are untouched by the flip
  CHECK(unscale->passed);
  CHECK(r.value("resumed_identical") == 2);  // fp32 and bf16: their scaler is disabled and has no state
  CHECK(r.value("fp16_resumed_identical") == 0);
  CHECK(resume->evidence.find("fp32 equal, bf16 equal, fp16 differs") != std::string::npos);
}
