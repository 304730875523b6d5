// Lab 06 (amp-api), beyond what tests/test_labs.cpp holds every lab to: the three precisions run whatever
// --dtype says, the flip drops exactly the fp16 resume, and the tiny-gradient batch needs the scale.
#include <doctest/doctest.h>

#include <string>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab06_amp_api_test {

TEST_CASE("the lab runs all three precisions whatever --dtype says, with the same results") {
  const auto bf16 = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  const auto fp16 = run_quick_lab("amp-api", torch::kHalf, /*flip=*/false);
  for (const char* key : {"final_loss_fp32", "loss_spread", "skipped_steps_fp16", "final_scale_fp16"}) {
    CAPTURE(key);
    CHECK(bf16.value(key) == fp16.value(key));
  }
}

TEST_CASE("the fp16 gap to fp32 is the skipped steps: fp32 skipping the same steps lands on fp16's loss") {
  const auto r = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  REQUIRE(r.value("skipped_steps_fp16") > 0);  // the scaler had steps to skip
  CHECK(r.value("fp16_gap_same_skips") < r.value("loss_spread"));
  CHECK(r.value("fp16_gap_same_skips") < 1.0);  // percent
}

TEST_CASE("dropping only the scaler's state (flip): fp32 and bf16 still resume bit for bit, fp16 does not") {
  const auto r = run_quick_lab("amp-api", torch::kHalf, /*flip=*/true);
  CHECK(r.value("resumed_identical") == 2);  // fp32 and bf16: their scaler is disabled and has no state
  CHECK(r.value("fp16_resumed_identical") == 0);
  CHECK(check_keyed(r, "resume-bitwise").evidence == "fp32 equal, bf16 equal, fp16 differs");
}

TEST_CASE(
    "on a batch with gradients below fp16's range, fp16 loses the steps without a scale, not with one") {
  const auto r = run_quick_lab("amp-api", torch::kHalf, /*flip=*/false);
  CHECK(r.value("probe_off_fp16_unscaled") >= 50.0);  // percent of the weights, the lab's own unscaled step
  for (const char* key : {"probe_off_fp32", "probe_off_bf16", "probe_off_fp16"}) {
    CAPTURE(key);
    CHECK(r.value(key) <= 1.0);
  }
  CHECK(r.value("fp16_scaler_enabled") == 1);
  // The logits' dtype, recorded by the MLP's last module: what autocast did in each run.
  CHECK(check_keyed(r, "autocast-dtype").evidence == "fp32: fp32; bf16: bf16; fp16: fp16");
  CHECK(check_keyed(r, "skips-exactly-overflows").passed);
}

TEST_CASE("a second unscale_ before update() raises Python's message") {
  const auto r = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  CHECK(r.value("second_unscale_refused") == 1);
  CHECK(
      r.render_text().find("unscale_() has already been called on this optimizer since the last update().") !=
      std::string::npos);
}

}  // namespace lab06_amp_api_test
