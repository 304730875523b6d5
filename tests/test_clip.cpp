// amp::clip_grad_norm_sharded (src/amp/clip.h): whole, it is torch::nn::utils::clip_grad_norm_; sharded over
// two Gloo ranks (threads of this process on a HashStore, 127.0.0.1), every rank scales by the factor of the
// whole gradients' norm, which a per-shard clip does not.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "amp/clip.h"
#include "amp/distributed.h"
#include "lab/libtorch.h"

namespace test_clip {

namespace {

constexpr double kMaxNorm = 1.0;
constexpr std::chrono::seconds kDeadline{60};  // the whole two-rank run; a rank that hangs fails the test

// Parameters with seeded gradients of norm about 9 (so a max_norm of 1 clips), sizes 7, 5 and 3x4.
std::vector<torch::Tensor> params_with_grads(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps;
  for (auto shape : std::vector<std::vector<int64_t>>{{7}, {5}, {3, 4}}) {
    torch::Tensor p = torch::randn(shape).requires_grad_();
    p.mutable_grad() = 2 * torch::randn(shape);
    ps.push_back(p);
  }
  return ps;
}

std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> gs;
  for (const auto& p : ps) gs.push_back(p.grad().clone());
  return gs;
}

// The whole gradients' 2-norm in float64, written out.
double norm_fp64(const std::vector<torch::Tensor>& gs) {
  double sum = 0;
  for (const auto& g : gs) sum += g.to(torch::kDouble).square().sum().item<double>();
  return std::sqrt(sum);
}

// Rank `rank` of two, holding parameters {0} (rank 0) or {1, 2} (rank 1) of `all`, with an inf in its first
// gradient when inf_rank == rank. Returns the norm it was given back; its gradients after the clip land in
// `out`.
float clip_as_rank(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                   const std::vector<torch::Tensor>& all, int inf_rank, bool global,
                   std::vector<torch::Tensor>& out) {
  auto pg = amp::make_gloo_group(store, rank, /*world_size=*/2);
  std::vector<torch::Tensor> shard =
      rank == 0 ? std::vector<torch::Tensor>{all[0]} : std::vector<torch::Tensor>{all[1], all[2]};
  if (rank == inf_rank) shard[0].mutable_grad()[0] = std::numeric_limits<float>::infinity();
  const float norm = amp::clip_grad_norm_sharded(shard, kMaxNorm, global ? pg : nullptr).item<float>();
  out = grads_of(shard);
  std::vector<torch::Tensor> barrier{torch::zeros({1})};
  pg->allreduce(barrier)->wait(std::chrono::seconds(20));
  return norm;
}

struct TwoRanks {
  float norm[2];
  std::vector<torch::Tensor> grads;  // rank 0's then rank 1's, in parameter order
};

TwoRanks two_ranks(uint64_t seed, int inf_rank, bool global) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<torch::Tensor> out[2];
  // Made here, not in the ranks' threads: both would draw from the one global generator at once.
  const std::vector<torch::Tensor> all[2] = {params_with_grads(seed), params_with_grads(seed)};
  auto run = [&](int rank) { return clip_as_rank(store, rank, all[rank], inf_rank, global, out[rank]); };
  auto r0 = std::async(std::launch::async, run, 0);
  auto r1 = std::async(std::launch::async, run, 1);
  REQUIRE(r0.wait_for(kDeadline) == std::future_status::ready);
  REQUIRE(r1.wait_for(kDeadline) == std::future_status::ready);
  TwoRanks t{{r0.get(), r1.get()}, out[0]};
  t.grads.insert(t.grads.end(), out[1].begin(), out[1].end());
  return t;
}

bool all_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("without a group it returns torch::nn::utils::clip_grad_norm_'s norm and gradients") {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    CAPTURE(seed);
    std::vector<torch::Tensor> mine = params_with_grads(seed), theirs = params_with_grads(seed);
    const double expected_norm = norm_fp64(grads_of(mine));
    REQUIRE(expected_norm > 2 * kMaxNorm);  // the case clips
    const float norm = amp::clip_grad_norm_sharded(mine, kMaxNorm).item<float>();
    const double torch_norm = torch::nn::utils::clip_grad_norm_(theirs, kMaxNorm);
    CHECK(norm == doctest::Approx(expected_norm).epsilon(1e-6));
    CHECK(norm == doctest::Approx(torch_norm).epsilon(1e-6));
    // The same factor up to an fp32 rounding of the norm: the clipped gradients agree to about 1e-7.
    for (size_t i = 0; i < mine.size(); ++i)
      CHECK(torch::allclose(mine[i].grad(), theirs[i].grad(), /*rtol=*/1e-6, /*atol=*/0));
    CHECK(norm_fp64(grads_of(mine)) == doctest::Approx(kMaxNorm).epsilon(1e-5));
  }
}

TEST_CASE("gradients whose norm is under max_norm are left bitwise as they were") {
  std::vector<torch::Tensor> ps = params_with_grads(3);
  const std::vector<torch::Tensor> before = grads_of(ps);
  const double norm = amp::clip_grad_norm_sharded(ps, /*max_norm=*/1e3).item<float>();
  CHECK(norm == doctest::Approx(norm_fp64(before)).epsilon(1e-6));
  CHECK(all_equal(grads_of(ps), before));
}

TEST_CASE("an inf or NaN gradient gives a non-finite norm and changes no gradient") {
  for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(bad);
    std::vector<torch::Tensor> ps = params_with_grads(1);
    ps[2].mutable_grad()[1][2] = bad;
    const std::vector<torch::Tensor> before = grads_of(ps);
    const float norm = amp::clip_grad_norm_sharded(ps, kMaxNorm).item<float>();
    CHECK_FALSE(std::isfinite(norm));
    // torch::equal is false where NaN meets NaN: compare the finite entries and the bad one's kind.
    for (size_t i = 0; i < ps.size(); ++i) {
      const torch::Tensor finite = torch::isfinite(before[i]);
      CHECK(torch::equal(ps[i].grad().masked_select(finite), before[i].masked_select(finite)));
      CHECK(torch::equal(torch::isfinite(ps[i].grad()), finite));
    }
  }
}

TEST_CASE("parameters without gradients are left out, and none at all gives a norm of zero") {
  std::vector<torch::Tensor> ps = params_with_grads(2);
  const double two_norm = norm_fp64({ps[0].grad(), ps[2].grad()});
  ps[1].mutable_grad() = torch::Tensor();
  CHECK(amp::clip_grad_norm_sharded(ps, /*max_norm=*/1e3).item<float>() ==
        doctest::Approx(two_norm).epsilon(1e-6));
  const torch::Tensor none =
      amp::clip_grad_norm_sharded({torch::zeros({3}, torch::requires_grad())}, kMaxNorm);
  CHECK(none.item<float>() == 0.0f);
  CHECK(none.device().is_cpu());
}

TEST_CASE("a max_norm that is not finite and positive is refused in one line") {
  std::vector<torch::Tensor> ps = params_with_grads(0);
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(amp::clip_grad_norm_sharded(ps, bad),
                         doctest::Contains("max_norm must be finite and > 0"), amp::ClipError);
  }
}

TEST_CASE("sharded over two ranks with the group, every rank clips by the whole gradients' norm") {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    CAPTURE(seed);
    std::vector<torch::Tensor> whole = params_with_grads(seed);
    const double whole_norm = amp::clip_grad_norm_sharded(whole, kMaxNorm).item<float>();
    const TwoRanks t = two_ranks(seed, /*inf_rank=*/-1, /*global=*/true);
    CHECK(t.norm[0] == t.norm[1]);  // one all-reduced value: bitwise the same on both ranks
    CHECK(t.norm[0] == doctest::Approx(whole_norm).epsilon(1e-6));
    for (size_t i = 0; i < whole.size(); ++i)
      CHECK(torch::allclose(t.grads[i], whole[i].grad(), /*rtol=*/1e-6, /*atol=*/0));
  }
}

TEST_CASE("without the group each rank clips by its own shard's norm, which is not the whole run's clip") {
  std::vector<torch::Tensor> whole = params_with_grads(0);
  amp::clip_grad_norm_sharded(whole, kMaxNorm);
  const TwoRanks t = two_ranks(0, /*inf_rank=*/-1, /*global=*/false);
  CHECK(t.norm[0] != doctest::Approx(t.norm[1]).epsilon(1e-3));  // each rank's own norm
  // Each shard ends at norm max_norm by itself, so the whole ends at about sqrt(2) x max_norm.
  CHECK(norm_fp64(t.grads) == doctest::Approx(std::sqrt(2.0) * kMaxNorm).epsilon(1e-5));
  CHECK(norm_fp64(grads_of(whole)) == doctest::Approx(kMaxNorm).epsilon(1e-5));
}

TEST_CASE("an inf in one rank's shard reaches every rank's norm, and no rank changes a gradient") {
  const std::vector<torch::Tensor> before = grads_of(params_with_grads(4));
  const TwoRanks t = two_ranks(4, /*inf_rank=*/1, /*global=*/true);
  CHECK(std::isinf(t.norm[0]));  // rank 0's shard is finite: the verdict came through the all-reduce
  CHECK(std::isinf(t.norm[1]));
  CHECK(torch::equal(t.grads[0], before[0]));  // rank 0 left its finite shard as it was
  CHECK(torch::equal(t.grads[2], before[2]));
}

}  // namespace test_clip
