// The lab framework's measurements: byte counts, relative errors, parameter comparison, the recipe's MLP,
// chart thinning and the small text helpers labs share.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "doctest_torch.h"
#include "lab/charts.h"
#include "lab/context.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/mlp.h"
#include "lab/report.h"

namespace test_measure {

TEST_CASE("Adam's state takes 8 bytes per fp32 parameter, and gradients count as their own tensors") {
  torch::manual_seed(0);
  lab::Mlp mlp(/*width=*/8, /*layers=*/2);
  const auto params = mlp->parameters();
  const int64_t n = lab::tensor_bytes(params) / 4;
  REQUIRE(n == 2 * (8 * 8 + 8));
  CHECK(lab::tensor_bytes(lab::grads(params)) == 0);  // no backward yet: undefined gradients count nothing
  mlp->forward(torch::randn({4, 8})).sum().backward();
  CHECK(lab::tensor_bytes(lab::grads(params)) == 4 * n);
  CHECK(lab::adam_state_bytes(params, /*learning_rate=*/1e-3) == 8 * n);
}

TEST_CASE("the MLP saves every layer output and its float64 pass matches the fp32 one to fp32 rounding") {
  torch::manual_seed(0);
  lab::Mlp mlp(/*width=*/16, /*layers=*/3);
  std::vector<torch::Tensor> saved;
  const auto x = torch::randn({5, 16});
  const auto y = mlp->forward(x, &saved);
  CHECK(saved.size() == 5u);  // 3 Linear outputs, 2 ReLU outputs
  CHECK(torch::equal(saved.back(), y));
  const auto ref = mlp->forward_fp64(x);
  CHECK(dtype_of(ref) == dtype_name(torch::kDouble));
  const double err = lab::max_rel_error(y, ref);
  CHECK(err > 0);
  CHECK(err < 1e-5);
}

TEST_CASE("max_rel_diff is max |a - b| / max |b|, and infinite when a diverged") {
  CHECK(lab::max_rel_diff({1, 2, 4}, {1, 2, 5}) == doctest::Approx(0.2));
  CHECK(lab::max_rel_diff({1, 2, 4}, {1, 2, 4}) == 0);
  CHECK(std::isinf(lab::max_rel_diff({1, std::numeric_limits<float>::quiet_NaN()}, {1, 2})));
}

TEST_CASE("parameters_equal is bitwise and reports the largest difference") {
  torch::manual_seed(0);
  lab::Mlp a(/*width=*/4, /*layers=*/1);
  torch::manual_seed(0);
  lab::Mlp b(/*width=*/4, /*layers=*/1);
  double diff = 0;
  CHECK(lab::parameters_equal(*a, *b, &diff));
  CHECK(diff == 0);
  {
    torch::NoGradGuard no_grad;
    b->layers[0]->bias[1].add_(0.5);
  }
  CHECK_FALSE(lab::parameters_equal(*a, *b, &diff));
  CHECK(diff == doctest::Approx(0.5));
}

TEST_CASE("every_kth keeps at most max_points values, starting with the first") {
  std::vector<double> v(130);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const auto t = lab::every_kth(v, /*max_points=*/60);
  CHECK(t.every == 3u);
  CHECK(t.values.size() == 44u);
  CHECK(t.values[1] == 3);
  CHECK(lab::every_kth({1, 2}, 60).every == 1u);
  CHECK(lab::every_kth({}, 60).values.empty());
}

TEST_CASE("MB cells, counts, dtype lists and flop rates read as the labs print them") {
  CHECK(lab::mb_cell(std::nullopt) == "-");
  CHECK(lab::mb_cell(0) == "-");
  CHECK(lab::mb_cell(1'500'000) == "1.5");
  CHECK(lab::count_of(3, 21) == "3 of 21");
  CHECK(lab::short_names({torch::ones({1}, torch::kHalf), torch::ones({1})}) == "fp16, fp32");
  CHECK(lab::is_16bit(torch::kBFloat16));
  CHECK_FALSE(lab::is_16bit(torch::kFloat));
  CHECK(lab::flop_rate(/*flop=*/2e9, /*ms=*/1000, /*unit=*/1e9) == doctest::Approx(2.0));
}

}  // namespace test_measure
