// Lab 07 (bf16-scaling, Q7): bf16's fp32-like exponent range keeps the small gradients fp16 loses.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip, torch::ScalarType dtype = torch::kBFloat16) {
  return run_quick_lab("bf16-scaling", dtype, flip);
}

}  // namespace

TEST_CASE("at scale 1 fp16 zeroes a large share of the small gradients and bf16 none") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("underflow_share_fp16") >= 20.0);  // percent
  CHECK(r.value("underflow_share_bf16") <= 1.0);
  // The same gradients counted through an autocast backward pass (lab 02's figure): close, not equal.
  CHECK(r.value("underflow_share_fp16_backward") >= 20.0);
  CHECK(r.value("underflow_share_bf16_backward") <= 1.0);
  CHECK(r.value("underflow_share_fp16_backward") == doctest::Approx(r.value("underflow_share_fp16")).epsilon(0.1));
}

TEST_CASE("the report says which zeroed share is a plain cast and which a backward pass") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.find("underflow_share_fp16")->label.find("plain cast") != std::string::npos);
  CHECK(r.find("underflow_share_fp16_backward")->label.find("backward pass") != std::string::npos);
  CHECK(r.render_text().find("lab 02 quotes this count") != std::string::npos);
}

TEST_CASE("bf16 without a scaler trains as well as fp16 with one, fp16 without one does worse") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("loss_ratio_bf16") == doctest::Approx(1.0).epsilon(0.10));
  CHECK(r.value("loss_ratio_fp32") == doctest::Approx(1.0).epsilon(0.10));
  CHECK(r.value("loss_ratio_fp16_unscaled") >= 1.5);
}

TEST_CASE("bf16's price is precision: it rounds several times coarser than fp16") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("rel_error_bf16") > r.value("rel_error_fp16"));
  CHECK(r.value("rel_error_ratio") >= 4.0);  // 3 fewer significand bits: about 8x
}

TEST_CASE("the lab uses both 16-bit types whatever the context names") {
  const lab::Report bf16 = run_quick(/*flip=*/false, torch::kBFloat16);
  const lab::Report fp16 = run_quick(/*flip=*/false, torch::kHalf);
  CHECK(fp16.passed());
  CHECK(fp16.value("underflow_share_bf16") == doctest::Approx(bf16.value("underflow_share_bf16")));
  CHECK(fp16.value("loss_ratio_bf16") == doctest::Approx(bf16.value("loss_ratio_bf16")));
}

TEST_CASE("flipped, fp16 stands in for bf16 and both bf16 checks fail") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "zeroes (almost) no gradient").passed);
  CHECK_FALSE(check_about(r, "trains about as well").passed);
  CHECK(r.value("underflow_share_bf16") == doctest::Approx(r.value("underflow_share_fp16")));
  CHECK(r.value("underflow_share_bf16_backward") == doctest::Approx(r.value("underflow_share_fp16_backward")));
  CHECK(check_about(r, "fp16 without a scaler does worse").passed);
}
