// Lab 01 (master-weights), beyond what tests/test_labs.cpp holds every lab to: fp16 unless --dtype names a
// type, the bound measured in both 16-bit formats, and what --flip changes in bf16 as well as in fp16.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab01_master_weights_test {

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

TEST_CASE(
    "without --dtype the lab measures fp16, the question's format, even where the device default is bf16") {
  const auto r = run_quick_lab("master-weights", torch::kBFloat16, /*flip=*/false);  // dtype not named
  CHECK(r.passed());
  CHECK(r.value("spacing_at_1") == std::ldexp(1.0, -10));
  CHECK(r.value("bound_kept") == std::ldexp(1.0, -11));
  CHECK(check_keyed(r, "lost-below-bound").claim.rfind("fp16:", 0) == 0);
}

TEST_CASE("in fp16 and bf16, w = 1 ignores 1e-4 updates and the 2^-11 (bf16: 2^-8) bound holds") {
  for (auto [dtype, rule] : {std::pair{torch::kHalf, 11}, std::pair{torch::kBFloat16, 8}}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.value("w_after_16bit") == 1.0);
    CHECK(r.value("w_after_fp32") == doctest::Approx(1.01).epsilon(1e-4));
    CHECK(r.value("spacing_at_1") == std::ldexp(1.0, 1 - rule));
    CHECK(r.value("bound_kept") == std::ldexp(1.0, -rule));
    CHECK(r.value("bound_lost") == std::ldexp(1.0, -rule - 1));
    CHECK(r.value("lost_at_rule") < 1.0);      // percent: updates of 2^-rule of w survive
    CHECK(r.value("lost_below_rule") > 99.0);  // half of that never does
    CHECK(r.value("lost_between") > 1.0);      // in between, it depends on the weight's mantissa
    CHECK(r.value("lost_between") < 99.0);
    // Ties round to even: 1 + half a spacing stays 1; (1 + spacing) + half a spacing goes up to 1 + 2
    // spacings.
    CHECK(r.value("tie_from_even") == 1.0);
    CHECK(r.value("tie_from_odd") == 1.0 + 2 * std::ldexp(1.0, 1 - rule));
  }
}

TEST_CASE("pure 16-bit training loses most updates and ends worse, while master weights track fp32") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(check_keyed(r, "updates-below-bound").passed);
    CHECK(check_keyed(r, "pure-16bit-loses-updates").passed);
    CHECK(check_keyed(r, "master-weights-track-fp32").passed);
    CHECK(r.value("updates_below_bound") >
          50.0);  // percent of the fp32 run's updates below 2^-12 (bf16 2^-9)
    CHECK(r.value("lost_share_16bit") > 50.0);
    CHECK(r.value("loss_ratio_16bit") >= 1.5);
    CHECK(r.value("lost_share_master") < 1.0);
    CHECK(r.value("loss_ratio_master") == doctest::Approx(1.0).epsilon(0.05));
  }
}

TEST_CASE("with the 16-bit weights kept in fp32 (flip), the lost-update checks fail in bf16 too") {
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    CAPTURE(lab::short_name(dtype));
    const auto r = run_quick(dtype, /*flip=*/true);
    CHECK_FALSE(check_keyed(r, "lost-below-bound").passed);
    CHECK_FALSE(check_keyed(r, "updates-below-bound").passed);
    CHECK_FALSE(check_keyed(r, "pure-16bit-loses-updates").passed);
    CHECK(check_keyed(r, "master-weights-track-fp32").passed);  // master weights were fp32 all along
    CHECK(r.value("updates_below_bound") < 1.0);                // fp32's bound is 2^-24: far below them
    CHECK(r.value("w_after_16bit") > 1.005);
    CHECK(r.value("lost_share_16bit") < 1.0);
    CHECK(r.value("loss_ratio_16bit") == doctest::Approx(1.0).epsilon(0.01));
  }
}

}  // namespace lab01_master_weights_test
