// Lab 08 (autocast-policy): autocast chooses a dtype per op; it neither converts everything nor keeps
// results bitwise equal to fp32.
#include <doctest/doctest.h>

#include <string>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("autocast-policy", dtype, flip);
}

}  // namespace

TEST_CASE("the autocast-policy lab is registered for question 8 and reports what it promises") {
  const lab::LabInfo* info = lab::find_lab("8");
  REQUIRE(info != nullptr);
  CHECK(info->id == "autocast-policy");
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  for (const auto& key : info->provides) CHECK_MESSAGE(r.find(key) != nullptr, key);
}

TEST_CASE("under CPU autocast every op follows the documented list, in bf16 and in fp16") {
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.passed());
    CHECK(r.checks().size() == 5);
    CHECK(r.value("policy_matches") == 16);
    CHECK(r.value("ops_fp32_or_wider") >= 5);     // mse_loss, add, cat, addmm_, sum(dtype), mm fp64
  }
}

TEST_CASE("an autocast result is close to the fp32 result but differs from it bitwise") {
  const auto bf16 = run_quick(torch::kBFloat16, /*flip=*/false);
  const auto fp16 = run_quick(torch::kHalf, /*flip=*/false);
  for (const auto* r : {&bf16, &fp16}) {
    CHECK(r->value("bitwise_differ_share") > 50.0);
    CHECK(r->value("autocast_rel_err") > 100 * r->value("fp32_rel_err"));
  }
  CHECK(bf16.value("autocast_rel_err") < 3.2e-2);  // 4 bf16 epsilons
  CHECK(fp16.value("autocast_rel_err") < 3.9e-3);  // 4 fp16 epsilons
  // fp16 keeps 3 more mantissa bits than bf16, so its error is smaller.
  CHECK(fp16.value("autocast_rel_err") < bf16.value("autocast_rel_err"));
}

TEST_CASE("with --flip (autocast disabled) the policy, per-op, bitwise and nesting checks fail") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK_FALSE(r.passed());
  for (const char* claim : {"every output dtype matches", "autocast chooses per op",
                            "the autocast result is close to", "a nested Autocast(enabled=false)"}) {
    const lab::Check* c = find_check(r, claim);
    REQUIRE_MESSAGE(c != nullptr, claim);
    CHECK_MESSAGE(!c->passed, claim);
  }
  CHECK(r.value("policy_matches") < 16);
  CHECK(r.value("bitwise_differ_share") == doctest::Approx(0.0));
  // Parameters are fp32 either way: that check does not depend on autocast.
  const lab::Check* params = find_check(r, "parameters and their gradients stay fp32");
  REQUIRE(params != nullptr);
  CHECK(params->passed);
}
