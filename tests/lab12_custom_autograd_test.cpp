// Lab 12 (custom-autograd, Q12), beyond tests/test_labs.cpp: where the unguarded function overflows.
#include <doctest/doctest.h>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab12_custom_autograd_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("custom-autograd", torch::kHalf, flip);
}

}  // namespace

TEST_CASE("on the CPU the sums of squares overflow fp16, not only the largest values") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("sum_dtype") == 16);  // CPU autocast leaves sum() in fp16
  CHECK(r.value("rows_over_fp16_max") == 100.0);
  CHECK(r.value("row_sumsq_min") > 65504);
  CHECK(r.value("over_clip_share") < 10.0);  // percent: few values overflow when squared alone
  CHECK(r.value("clipped_non_finite") >= 50.0);
  CHECK(r.value("plain_non_finite") >= 50.0);
  CHECK(r.value("mixed_backward_refused") == 1);
}

}  // namespace lab12_custom_autograd_test
