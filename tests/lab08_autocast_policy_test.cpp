// Lab 08 (autocast-policy), beyond tests/test_labs.cpp: the counts and the op names in the sentences the
// quiz cites come from the table, so they cannot disagree with it (prod(dtype=bf16) gives bf16
// and is no "fp32 or wider" op; mse_loss and prod were moved to fp32, not "kept" there).
#include <doctest/doctest.h>

#include <string>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab08_autocast_policy_test {

namespace {

lab::Report run_quick(torch::ScalarType dtype, bool flip) {
  return run_quick_lab("autocast-policy", dtype, flip);
}

bool contains(const std::string& text, const std::string& words) {
  return text.find(words) != std::string::npos;
}

}  // namespace

TEST_CASE("under CPU autocast every op follows the documented list, in bf16 and in fp16") {
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const std::string lp = dtype == torch::kHalf ? "fp16" : "bf16";
    CAPTURE(lp);
    const auto r = run_quick(dtype, /*flip=*/false);
    CHECK(r.value("policy_matches") == 21);
    // mm, matmul, linear, conv2d, bmm, addmm to 16-bit; mse_loss and prod to fp32.
    CHECK(r.value("ops_changed") == 8);
    CHECK(r.value("ops_to_16bit") == 6);
    CHECK(r.find("ops_to_fp32")->text == "2 of 21 (mse_loss and prod)");
    // mse_loss, prod (moved there) and add, cat, addmm_, mv, addmv, addr, mm on fp64 (there anyway).
    CHECK(r.value("ops_fp32_or_wider") == 9);
    CHECK(r.value("ops_kept_wide") == 7);
    CHECK(r.value("ops_fp32_or_wider") == r.value("ops_to_fp32") + r.value("ops_kept_wide"));
    CHECK_FALSE(contains(r.find("ops_fp32_or_wider")->text, "prod(dtype="));
    CHECK(contains(r.find("ops_kept_16bit")->text, "prod(dtype=" + lp + ")"));
    CHECK(contains(r.find("ops_left_alone")->text, "prod(dtype=" + lp + ") gave " + lp));
    CHECK(contains(r.find("ops_left_alone")->text, "addmm_ (in-place) gave fp32"));
    CHECK(r.find("layer_params_fp32")->text ==
          lp + " output, with 2 of 2 parameters and their gradients in fp32");
  }
}

TEST_CASE("the documented CPU and CUDA lists differ where the policy says: mv, addmv, addr, softmax and co") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/false);
  const std::string text = r.find("device_differences")->text;
  CHECK(contains(text, "mv, addmv, addr: no list on the CPU, lower-precision list on CUDA"));
  CHECK(
      contains(text, "softmax, log_softmax, sum, exp, layer_norm: no list on the CPU, float32 list on CUDA"));
  CHECK(contains(r.render_text(), "explicit dtype, not autocast -> bf16: prod(dtype=bf16)"));
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

TEST_CASE("with --flip (autocast disabled) nothing changes dtype and the sentences say so") {
  const auto r = run_quick(torch::kBFloat16, /*flip=*/true);
  CHECK(r.value("policy_matches") < 21);
  CHECK(r.value("ops_changed") == 0);
  CHECK(r.find("ops_changed")->text == "0 of 21");
  CHECK(r.value("bitwise_differ_share") == doctest::Approx(0.0));
}

}  // namespace lab08_autocast_policy_test
