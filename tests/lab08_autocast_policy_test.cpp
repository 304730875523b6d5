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
    CHECK(r.checks().size() == 6);
    CHECK(r.value("policy_matches") == 21);
    // mse_loss, add, cat, addmm_, prod, mv, addmv, addr, mm on fp64
    CHECK(r.value("ops_fp32_or_wider") == 9);
    // mm, matmul, linear, conv2d, bmm, addmm (fp32 -> 16-bit); mse_loss, prod (16-bit -> fp32). cat of
    // 16-bit and fp32 gives fp32 by plain type promotion, with autocast or without.
    CHECK(r.value("ops_changed") == 8);
  }
}

TEST_CASE("on the CPU mv, addmv and addr stay fp32 (16-bit on CUDA), and prod(dtype=) is left alone") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  const std::string text = r.render_text();
  CHECK(text.find("CPU vs CUDA: softmax, log_softmax, sum, exp, layer_norm: no list on CPU, float32 list on CUDA") !=
        std::string::npos);
  CHECK(text.find("CPU vs CUDA: mv, addmv, addr: no list on CPU, lower-precision list on CUDA") != std::string::npos);
  CHECK(check_about(r, "addmm_ stays bitwise equal").passed);
  CHECK(check_about(r, "parameters and their gradients stay fp32").passed);
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

TEST_CASE("with --flip (autocast disabled) every check fails") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK_FALSE(r.passed());
  for (const char* claim : {"every output dtype matches", "autocast chooses per op", "addmm_ stays bitwise equal",
                            "parameters and their gradients stay fp32", "the autocast result is close to",
                            "a nested Autocast(enabled=false)"}) {
    const lab::Check* c = find_check(r, claim);
    REQUIRE_MESSAGE(c != nullptr, claim);
    CHECK_MESSAGE(!c->passed, claim);
  }
  CHECK(r.value("policy_matches") < 21);
  CHECK(r.value("ops_changed") == 0);
  CHECK(r.value("bitwise_differ_share") == doctest::Approx(0.0));
  CHECK(r.checks_passed() == 0);
}
