// Lab 07 (bf16-scaling, Q7), beyond what tests/test_labs.cpp holds every lab to: the two counts of zeroed
// gradients, the one that lab 02 quotes, the formats' numbers the explanation cites, whatever --dtype says.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab07_bf16_scaling_test {

namespace {

lab::Report run_quick(bool flip, torch::ScalarType dtype = torch::kBFloat16) {
  return run_quick_lab("bf16-scaling", dtype, flip);
}

}  // namespace

TEST_CASE("at scale 1 fp16 zeroes a large share of the small gradients and bf16 none, cast or in backward") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("underflow_share_fp16") >= 20.0);  // percent
  CHECK(r.value("underflow_share_bf16") <= 1.0);
  CHECK(r.value("underflow_share_fp16_backward") >= 20.0);
  CHECK(r.value("underflow_share_bf16_backward") <= 1.0);
  // The same gradients counted through an autocast backward pass: close to the plain cast's, not equal.
  CHECK(r.value("underflow_share_fp16_backward") ==
        doctest::Approx(r.value("underflow_share_fp16")).epsilon(0.1));
}

TEST_CASE("lab 02 quotes lab 07's backward-pass count: the same run gives the same share") {
  const lab::Report r = run_quick(/*flip=*/false);
  const lab::Report lab02 = run_quick_lab("loss-scaling", torch::kHalf, /*flip=*/false);
  CHECK(r.value("underflow_share_fp16_backward") == lab02.value("underflow_share_unscaled"));
  CHECK(r.render_text().find("lab 02 quotes this count") != std::string::npos);
}

TEST_CASE("the formats' numbers come from std::numeric_limits") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("fp16_exponent_bits") == 5);
  CHECK(r.value("bf16_exponent_bits") == 8);
  CHECK(r.value("fp16_min_subnormal") == std::ldexp(1.0, -24));
  CHECK(r.value("bf16_min_subnormal") == std::ldexp(1.0, -133));
  CHECK(r.value("fp16_significant_bits") == 11);
  CHECK(r.value("bf16_significant_bits") == 8);
  CHECK(r.value("fp32_significant_bits") == 24);
  CHECK(r.value("rel_error_ratio") == doctest::Approx(8.0).epsilon(0.25));  // 2^(11 - 8)
}

TEST_CASE("the lab uses both 16-bit types whatever the context names") {
  const lab::Report bf16 = run_quick(/*flip=*/false, torch::kBFloat16);
  const lab::Report fp16 = run_quick(/*flip=*/false, torch::kHalf);
  CHECK(fp16.passed());
  CHECK(fp16.value("underflow_share_bf16") == bf16.value("underflow_share_bf16"));
  CHECK(fp16.value("loss_ratio_bf16") == bf16.value("loss_ratio_bf16"));
}

TEST_CASE("flipped, fp16 stands in for bf16: its counts and its run are fp16's") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK(r.value("underflow_share_bf16") == r.value("underflow_share_fp16"));
  CHECK(r.value("underflow_share_bf16_backward") == r.value("underflow_share_fp16_backward"));
  CHECK(r.value("loss_ratio_bf16") == r.value("loss_ratio_fp16_unscaled"));
  CHECK(r.value("rel_error_ratio") == 1.0);
}

}  // namespace lab07_bf16_scaling_test
