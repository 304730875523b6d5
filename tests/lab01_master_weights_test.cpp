// Lab 01 (master-weights): 16-bit storage rounds small updates away; fp32 master weights keep them.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

// As `--dtype fp16|bf16 --quick` on the command line: the dtype is named, so the lab uses it.
lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  const lab::LabInfo* info = lab::find_lab("master-weights");
  REQUIRE(info != nullptr);
  lab::Context ctx;
  ctx.dtype = dtype;
  ctx.dtype_given = true;
  ctx.quick = true;
  ctx.flip = flip;
  return lab::run_lab(*info, ctx);
}

}  // namespace

TEST_CASE("the master-weights lab is registered for question 1") {
  const lab::LabInfo* info = lab::find_lab("1");
  REQUIRE(info != nullptr);
  CHECK(info->id == "master-weights");
}

TEST_CASE("without --dtype the lab measures fp16, the question's format, even where the device default is bf16") {
  const auto r = run_quick_lab("master-weights", torch::kBFloat16, /*flip=*/false);  // dtype not named
  CHECK(r.passed());
  CHECK(r.value("spacing_at_1") == std::ldexp(1.0, -10));
  CHECK(find_check(r, "fp16: w = 1 ignores") != nullptr);
}

TEST_CASE("in fp16 and bf16, w = 1 ignores 1e-4 updates and the 2^-11 (bf16: 2^-8) rule holds") {
  for (auto [dtype, rule] : {std::pair{torch::kHalf, 11}, std::pair{torch::kBFloat16, 8}}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.value("w_after_16bit") == 1.0);
    CHECK(r.value("w_after_fp32") == doctest::Approx(1.01).epsilon(1e-4));
    CHECK(r.value("spacing_at_1") == std::ldexp(1.0, 1 - rule));
    CHECK(r.value("lost_at_rule") < 1.0);       // percent: updates of 2^-rule of w survive
    CHECK(r.value("lost_below_rule") > 99.0);   // half of that never does
    // In between, it depends on the weight's mantissa: some are lost, some kept.
    CHECK(r.value("lost_between") > 1.0);
    CHECK(r.value("lost_between") < 99.0);
    // Ties round to even: 1 + half a spacing stays 1; (1 + spacing) + half a spacing goes up to 1 + 2 spacings.
    CHECK(r.value("tie_from_even") == 1.0);
    CHECK(r.value("tie_from_odd") == 1.0 + 2 * std::ldexp(1.0, 1 - rule));
  }
}

TEST_CASE("pure 16-bit training loses most updates and ends worse, while master weights track fp32") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/false);
    REQUIRE(r.checks().size() == 4);
    CHECK(check_about(r, "most of the run's updates").passed);
    CHECK(r.value("updates_below_bound") > 50.0);  // percent of the fp32 run's updates below 2^-12 (bf16 2^-9)
    CHECK(r.value("lost_share_16bit") > 50.0);
    CHECK(r.value("loss_ratio_16bit") >= 1.5);
    CHECK(r.value("lost_share_master") < 1.0);
    CHECK(r.value("loss_ratio_master") == doctest::Approx(1.0).epsilon(0.05));
    CHECK(r.value("final_loss_fp32") > 0.0);
  }
}

TEST_CASE("with the 16-bit weights kept in fp32 (flip), the lost-update checks fail") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/true);
    CHECK_FALSE(r.passed());
    const lab::Check* rounding = find_check(r, "w = 1 ignores 1e-4 updates");
    const lab::Check* pure = find_check(r, "pure ");
    const lab::Check* master = find_check(r, "master weights lose");
    // fp32 storage's bound is 2^-24: the run's updates are all far above it.
    CHECK_FALSE(check_about(r, "most of the run's updates").passed);
    CHECK(r.value("updates_below_bound") < 1.0);
    REQUIRE(rounding != nullptr);
    REQUIRE(pure != nullptr);
    REQUIRE(master != nullptr);
    CHECK_FALSE(rounding->passed);
    CHECK_FALSE(pure->passed);
    CHECK(master->passed);  // untouched by the flip: master weights were fp32 all along
    CHECK(r.value("w_after_16bit") > 1.005);
    CHECK(r.value("lost_share_16bit") < 1.0);
    CHECK(r.value("loss_ratio_16bit") == doctest::Approx(1.0).epsilon(0.01));
  }
}
