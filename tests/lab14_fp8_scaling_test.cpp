// Lab 14 (fp8-scaling, Q14): what tests/test_labs.cpp does not cover. The lab's FP8 matmul on the CPU is
// an emulation; it must be at::_scaled_mm's arithmetic, bit for bit where ATen runs its fallback kernel.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab/hardware.h"
#include "lab_test_support.h"

namespace lab14_fp8_scaling_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("fp8-scaling", torch::kBFloat16, flip);
}

}  // namespace

TEST_CASE("the emulated FP8 matmul gives at::_scaled_mm's values: bitwise where the CPU has no AMX") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(check_keyed(r, "emulation-matches-scaled-mm").passed);
  CHECK(r.value("emulation_error_vs_bound") <= 1.0);
  // Without amx_int8 ATen's _scaled_mm dequantizes and calls at::matmul, as the emulation does: measured
  // bitwise equal on all nine step-0 products (forward, input and weight gradients, E4M3 and E5M2 x E4M3).
  // With AMX it runs oneDNN, which may round differently within the fp32 accumulation bound.
  if (lab::cpu_flags().count("amx_int8") == 0) {
    CHECK(r.value("emulation_bitwise") == 9);
    CHECK(r.value("emulation_error_vs_bound") == 0.0);
  }
}

TEST_CASE("--flip drops exactly the per-tensor scales: current and delayed scaling then train unscaled") {
  const lab::Report plain = run_quick(/*flip=*/false), flipped = run_quick(/*flip=*/true);
  CHECK(flipped.value("loss_ratio_fp8_current") == flipped.value("loss_ratio_fp8_unscaled"));
  CHECK(flipped.value("loss_ratio_fp8_delayed") == flipped.value("loss_ratio_fp8_unscaled"));
  // The runs without per-tensor scales are the same runs either way.
  CHECK(flipped.value("loss_ratio_fp8_unscaled") == plain.value("loss_ratio_fp8_unscaled"));
  CHECK(flipped.value("loss_ratio_fp8_loss_scale") == plain.value("loss_ratio_fp8_loss_scale"));
  CHECK(flipped.value("loss_ratio_no_exp_limit") == plain.value("loss_ratio_no_exp_limit"));
}

TEST_CASE("delayed scaling clips a tensor that outgrows its history, and current scaling loses nothing") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("delayed_clipped") > 0.0);  // percent of one tensor in one cast
  CHECK(r.value("delayed_margin_clipped") < r.value("delayed_clipped"));
  CHECK(r.value("grad_flushed_scaled") == 0.0);  // current scaling at step 0
  CHECK(r.value("limits_agree") == 1.0);
}

}  // namespace lab14_fp8_scaling_test
