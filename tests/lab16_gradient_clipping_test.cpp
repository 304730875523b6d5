// Lab 16 (gradient-clipping, Q16), beyond what tests/test_labs.cpp holds every lab to: the numbers its
// quiz question quotes, what each run's clip did, and what --flip changes.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lab/libtorch.h"
#include "lab_test_support.h"

namespace lab16_gradient_clipping_test {

namespace {

lab::Report run_quick(bool flip) {
  return run_quick_lab("gradient-clipping", torch::kHalf, flip);
}

}  // namespace

TEST_CASE("clipped by the global norm, the sharded step is the fp32 reference's, by each shard's it is not") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("global_update_diff") <= 1e-2);
  CHECK(r.value("global_factor_spread") <= 1e-4);  // one factor on every rank
  CHECK(r.value("global_norm_ratio") == doctest::Approx(1.0).epsilon(1e-2));
  CHECK(r.value("global_factor_worst") <= 1e-2);
  CHECK(r.value("global_loose_factor_max") == doctest::Approx(1.0).epsilon(1e-3));
  CHECK(r.value("local_factor_vs_global") >= 1.05);
  CHECK(r.value("inf_step_moved_ranks") == 0);
  CHECK(r.value("ref_factor_step0") < 1);  // the clip is active, or nothing here would show
}

TEST_CASE(
    "clipped by each shard's own norm, both shards bind: the step-0 update is sqrt(world) times too big") {
  // Each shard is scaled to a norm of max_norm, so together they move sqrt(world) x max_norm where the
  // reference moves max_norm: the 1.41 the quiz quotes is sqrt(2).
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("local_step0_update_ratio") == doctest::Approx(std::sqrt(r.value("world"))).epsilon(1e-3));
}

TEST_CASE("the runs reach where clipping mistakes show: the clip binds on some steps, norms overflow fp16") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("ref_bound_factor_max") < 0.5);
  CHECK(r.value("ref_loose_factor_min") == 1);
  CHECK(r.value("ref_sum_squares_min") > 65504);  // a sum of squares in fp16 is inf
  CHECK(check_keyed(r, "runs-reach-clip-limits").passed);
}

TEST_CASE("clipped before unscale_, the clip bounds the scaled gradients: the update shrinks by the scale") {
  const lab::Report r = run_quick(/*flip=*/false);
  const double scale = r.value("scale");
  CHECK(r.value("clip_first_norm_ratio") == doctest::Approx(scale).epsilon(1e-2));
  // Its factor on the true gradients is the reference's over the scale (step 0: the same weights).
  CHECK(r.value("clip_first_factor_x_scale") == doctest::Approx(1.0).epsilon(1e-2));
  CHECK(r.value("clip_first_update_ratio") < 0.1);  // the odd steps too: clipped at the scaled norm
  CHECK(r.value("whole_update_diff") <= 1e-2);
}

TEST_CASE("flipped, sharded-total clips per shard: its factors part and its update leaves the reference") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK(!r.passed());
  CHECK(r.value("global_factor_worst") >= 0.05);  // each rank's factor off the global one
  CHECK(r.value("global_update_diff") == doctest::Approx(r.value("local_update_diff")));
  CHECK(r.value("inf_step_moved_ranks") == 0);  // the scaler's verdict is still global
  CHECK(check_keyed(r, "inf-skips-every-rank").passed);
  CHECK(check_keyed(r, "local-clip-differs").passed);
}

}  // namespace lab16_gradient_clipping_test
