// Lab 02 (loss-scaling, Q2): fp16 flushes small activation gradients to zero, loss scaling rescues them.
#include <doctest/doctest.h>

#include <string_view>

#include <torch/torch.h>

#include "lab/registry.h"

namespace {

lab::Report run_quick(bool flip, torch::ScalarType dtype = torch::kHalf) {
  const lab::LabInfo* info = lab::find_lab("loss-scaling");
  REQUIRE(info != nullptr);
  lab::Context ctx;
  ctx.device = torch::kCPU;
  ctx.dtype = dtype;
  ctx.quick = true;
  ctx.flip = flip;
  return lab::run_lab(*info, ctx);
}

// The check whose claim contains `words`.
const lab::Check& check_about(const lab::Report& report, std::string_view words) {
  for (const auto& c : report.checks())
    if (c.claim.find(words) != std::string::npos) return c;
  FAIL("no check mentions '" << words << "'");
  throw std::logic_error("unreachable");
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
