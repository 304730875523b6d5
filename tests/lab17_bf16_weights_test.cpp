// Lab 17 (bf16-weights, Q17), beyond what tests/test_labs.cpp holds every lab to: the bytes each run keeps,
// the updates small next to bf16's gap, and the flip's round-to-nearest adds matching the lab's own one.
#include <doctest/doctest.h>

#include <cmath>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab17_bf16_weights_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("bf16-weights", torch::kBFloat16, flip);
}

}  // namespace

TEST_CASE(
    "the allocator counts each run's state after its steps: weights 2 B, a compensation 2 B, a master 4 B") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("bytes_fp32") == 4);
  CHECK(r.value("bytes_pure") == 2);
  CHECK(r.value("bytes_stochastic") == 2);
  CHECK(r.value("bytes_kahan") == 4);
  CHECK(r.value("bytes_master") == 6);
}

TEST_CASE("the run's updates are a small share of bf16's gap, so round to nearest loses nearly all of them") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("update_to_spacing") < 0.5);
  CHECK(r.value("lost_share_pure") >= 90.0);  // percent
  CHECK(r.value("lost_share_fp32_grad") >= 90.0);
  CHECK(r.value("lost_share_master") <= 1.0);
  CHECK(r.passed());
}

TEST_CASE("stochastic rounding draws from the generator handed in, about sqrt(f(1-f)) gaps apart, unbiased") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("sr_generator_used") == 1);
  CHECK(r.value("sr_least_spread") > 0.3);  // sqrt(0.2 x 0.8) = 0.4 for the 0.2 case
  CHECK(std::abs(r.value("sr_away_bias")) < 0.05);
}

TEST_CASE(
    "flipped, the stochastic and Kahan runs are the lab's own round-to-nearest run, number for number") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK(r.value("lost_share_stochastic") == r.value("lost_share_fp32_grad"));
  CHECK(r.value("loss_ratio_stochastic") == r.value("loss_ratio_fp32_grad"));
  CHECK(r.value("lost_share_kahan") == r.value("lost_share_fp32_grad"));
  CHECK(r.value("loss_ratio_kahan") == r.value("loss_ratio_fp32_grad"));
  CHECK(r.value("sr_spread_ratio") == 0.0);  // every draw the nearest neighbour
  CHECK(r.value("sr_least_spread") == 0.0);
  CHECK(r.value("sr_generator_used") == 0);  // round to nearest draws nothing
  CHECK(r.value("bytes_kahan") == 4);        // the buffer is still made: only the update changed
}

}  // namespace lab17_bf16_weights_test
