// Lab 02 (loss-scaling, Q2): fp16 flushes small activation gradients to zero, loss scaling rescues them.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip, torch::ScalarType dtype = torch::kHalf) {
  return run_quick_lab("loss-scaling", dtype, flip);
}

}  // namespace

TEST_CASE("without scaling fp16 zeroes many small gradients, and training with a GradScaler matches fp32") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("underflow_share_unscaled") >= 20.0);  // percent
  CHECK(r.value("underflow_share_fixed") <= 1.0);
  CHECK(r.value("underflow_share_scaler") <= 1.0);
  CHECK(r.value("loss_ratio_unscaled") >= 1.5);
  CHECK(r.value("loss_ratio_scaler") == doctest::Approx(1.0).epsilon(0.05));
}

TEST_CASE("a GradScaler that starts too high skips exactly the overflowing steps and grows again") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("skipped_steps") >= 1);
  CHECK(check_about(r, "skipped exactly").passed);
}

TEST_CASE("the lab measures fp16 whatever 16-bit type the context names") {
  const lab::Report fp16 = run_quick(/*flip=*/false, torch::kHalf);
  const lab::Report bf16 = run_quick(/*flip=*/false, torch::kBFloat16);
  CHECK(bf16.passed());
  CHECK(bf16.value("underflow_share_unscaled") == doctest::Approx(fp16.value("underflow_share_unscaled")));
  CHECK(bf16.value("loss_ratio_unscaled") == doctest::Approx(fp16.value("loss_ratio_unscaled")));
}

TEST_CASE("flipped, the gradients are not small: nothing underflows and fp16 trains as well without scaling") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "substantial share").passed);
  CHECK_FALSE(check_about(r, "without scaling ends").passed);
  CHECK(r.value("underflow_share_unscaled") < 1.0);
  CHECK(r.value("loss_ratio_unscaled") == doctest::Approx(1.0).epsilon(0.05));
  CHECK(check_about(r, "skipped exactly").passed);  // the scaler's mechanics do not depend on the flip
}

TEST_CASE("the report says why the gradients are small and marks fp16's subnormal band as kept, with fewer bits") {
  const lab::Report r = run_quick(/*flip=*/false);
  const std::string text = r.render_text({.part = lab::Part::Measured});
  CHECK(text.find("small by construction") != std::string::npos);
  CHECK(text.find("fp16 subnormals from 2^-24 (smallest): kept, with fewer bits") != std::string::npos);
  CHECK(text.find("fp16 subnormals up to 2^-14: kept, with fewer bits") != std::string::npos);
}
