// Lab 12 (custom-autograd, Q12): amp::CustomFwd / CustomBwd make hand-written autograd functions safe
// under fp16 autocast.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("custom-autograd", torch::kHalf, flip); }

}  // namespace

TEST_CASE("unguarded the function overflows in fp16, guarded it matches float64, and the mixed-dtype backward runs") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("plain_non_finite") >= 50.0);  // percent
  CHECK(r.value("guarded_output_error") <= 1e-2);
  CHECK(r.value("guarded_grad_error") <= 1e-2);
  CHECK(r.value("mixed_backward_refused") == 1);
  CHECK(r.value("mixed_grad_error") <= 1e-2);
}

TEST_CASE("flipped, without the guards the outputs overflow and the mixed-dtype backward is refused") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "with cast_inputs=fp32").passed);
  CHECK_FALSE(check_about(r, "with CustomBwd").passed);
  CHECK(check_about(r, "without a guard").passed);
}
