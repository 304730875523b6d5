// Lab 14 (fp8-scaling, Q14): what tests/test_labs.cpp does not cover. The lab's FP8 matmul on the CPU is
// an emulation; it must be at::_scaled_mm's arithmetic, bit for bit where ATen runs its fallback kernel.
#include <doctest/doctest.h>

#include <cmath>

#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab14_fp8_scaling_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("fp8-scaling", torch::kBFloat16, flip);
}

}  // namespace

TEST_CASE("the emulated FP8 matmul gives at::_scaled_mm's values: bitwise where the CPU has no AMX") {
  // Shown as a demonstration, not checked: without AMX the two are the same arithmetic.
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.find_check("emulation-matches-scaled-mm") == nullptr);
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

TEST_CASE("an unscaled cast past the max saturates in E4M3 and overflows to inf in E5M2") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("e4m3_cast_past_max") == 448.0);     // 1000 (and inf) cast to e4m3fn
  CHECK(std::isinf(r.value("e5m2_cast_past_max")));  // 1e5 cast to E5M2
  CHECK(r.find("e4m3_cast_past_max")->text.find("inf gave 448") != std::string::npos);
}

TEST_CASE(
    "E5M2 alone spans more than the amaxes' spread, and one factor's room (x's E4M3 max to dL/dy1's E5M2 "
    "smallest subnormal) does not") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("e4m3_span_binades") == doctest::Approx(std::log2(448.0 / std::exp2(-9))));
  CHECK(r.value("e5m2_span_binades") == doctest::Approx(std::log2(57344.0 / std::exp2(-16))));
  CHECK(r.value("one_scale_room_binades") == doctest::Approx(std::log2(448.0 / std::exp2(-16))));
  CHECK(r.value("e5m2_span_binades") > r.value("amax_spread_binades"));
  CHECK(r.value("one_scale_room_binades") < r.value("amax_spread_binades"));
}

// quiz.yaml's Q14 quotes these ranges over seeds 0-9 (default mode, the CPU's emulation), measured on two
// 2-core machines of BENCHMARKS.md, which differ: an AMD EPYC without AMX and an Intel Xeon with AMX (where
// oneDNN computes the bf16 matmuls of the ratios' denominator, bf16's run), so each kind has its ranges.
// They are what this toy run shows, not a property of the recipes, and the text says so; this holds the
// text to the runs (a retuned lab with an unchanged text fails here).
struct Q14Ranges {
  const char* machine;
  double delayed_lo, delayed_hi, current_lo, current_hi;
  bool delayed_below_yardstick;  // held at every seed on this kind of machine (not on the other)
};

TEST_CASE("over seeds 0-9 delayed scaling ends below current scaling, within the ranges Q14 quotes") {
  const lab::LabInfo* info = lab::find_lab("fp8-scaling");
  REQUIRE(info != nullptr);
  const bool amx = lab::cpu_flags().count("amx_bf16") > 0;
  // "0.92-1.18x and 1.09-1.33x on a 2-core AMD EPYC, 0.98-1.25x and 1.10-1.27x on a 2-core Intel Xeon
  // with AMX": each bound half a unit of the last digit out.
  const Q14Ranges q = amx ? Q14Ranges{"Intel Xeon with AMX", 0.975, 1.255, 1.095, 1.275, false}
                          : Q14Ranges{"AMD EPYC (no AMX)", 0.915, 1.185, 1.085, 1.335, true};
  MESSAGE("the ranges Q14 quotes for " << q.machine);
  for (uint64_t seed = 0; seed <= 9; ++seed) {
    lab::Context ctx;
    ctx.device = torch::kCPU;
    ctx.dtype = torch::kBFloat16;
    ctx.seed = seed;
    const lab::Report r = lab::run_lab(*info, ctx);
    CAPTURE(seed);
    const double current = r.value("loss_ratio_fp8_current"), delayed = r.value("loss_ratio_fp8_delayed");
    CHECK(delayed < current);
    // Below the yardstick too (0.82-0.99x of it on the AMD EPYC; at seed 7 on the Xeon 1.05x).
    if (q.delayed_below_yardstick) CHECK(delayed < r.value("loss_ratio_no_exp_limit"));
    CHECK(delayed >= q.delayed_lo);
    CHECK(delayed <= q.delayed_hi);
    CHECK(current >= q.current_lo);
    CHECK(current <= q.current_hi);
    CHECK(r.value("delayed_clipped") >= 63.5);  // 64-95% of one tensor at one step, on both machines
    CHECK(r.value("delayed_clipped") <= 95.5);
  }
}

}  // namespace lab14_fp8_scaling_test
