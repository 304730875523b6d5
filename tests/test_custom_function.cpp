// amp::CustomFwd / amp::CustomBwd: torch.amp.custom_fwd / custom_bwd semantics on the CPU, observed from
// inside a custom autograd function's forward and backward.
#include <doctest/doctest.h>

#include <ATen/autocast_mode.h>

#include "amp/autocast.h"
#include "amp/custom_function.h"
#include "doctest_torch.h"
#include "lab/libtorch.h"

namespace test_custom_function {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What forward and backward saw, recorded from inside them.
struct Seen {
  bool fwd_autocast = false, bwd_autocast = false;
  std::string x_dtype, w_dtype, scale_dtype, mm_dtype, bwd_mm_dtype, bwd_autocast_dtype;
};
Seen g_seen;
std::optional<torch::ScalarType> g_cast_inputs;  // the CustomFwd argument for the next call

// y = (x @ w) * scale, with scale a float64 tensor (never cast) and an integer count passed through.
struct ScaledMM : torch::autograd::Function<ScaledMM> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor w, torch::Tensor scale,
                               int64_t n) {
    amp::CustomFwd amp_fwd(ctx, torch::kCPU, g_cast_inputs);
    x = amp_fwd.cast(x);
    w = amp_fwd.cast(w);
    scale = amp_fwd.cast(scale);
    n = amp_fwd.cast(n);
    g_seen.fwd_autocast = at::autocast::is_autocast_enabled(torch::kCPU);
    g_seen.x_dtype = dtype_of(x);
    g_seen.w_dtype = dtype_of(w);
    g_seen.scale_dtype = dtype_of(scale);
    const torch::Tensor mm = x.mm(w);
    g_seen.mm_dtype = dtype_of(mm);
    ctx->save_for_backward({x, w});
    ctx->saved_data["scale"] = scale.item<double>() * static_cast<double>(n);
    return mm * ctx->saved_data["scale"].toDouble();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    amp::CustomBwd amp_bwd(ctx, torch::kCPU);
    g_seen.bwd_autocast = at::autocast::is_autocast_enabled(torch::kCPU);
    g_seen.bwd_autocast_dtype = dtype_name(at::autocast::get_autocast_dtype(torch::kCPU));
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor g = grad[0] * ctx->saved_data["scale"].toDouble();
    // grad is in the output's dtype, the saved inputs in theirs: autocast's mm reconciles them.
    const torch::Tensor gx = g.mm(saved[1].t());
    g_seen.bwd_mm_dtype = dtype_of(gx);
    return {gx, saved[0].t().mm(g), torch::Tensor(), torch::Tensor()};
  }
};

torch::Tensor call(const torch::Tensor& x, const torch::Tensor& w,
                   std::optional<torch::ScalarType> cast_inputs) {
  g_seen = {};
  g_cast_inputs = cast_inputs;
  return ScaledMM::apply(x, w, torch::full({}, 0.5, torch::kDouble), /*n=*/2);
}

}  // namespace

TEST_CASE("outside autocast the guards change nothing, with or without cast_inputs") {
  auto x = torch::randn({4, 3}, torch::requires_grad());
  auto w = torch::randn({3, 2}, torch::requires_grad());
  for (auto cast : {std::optional<torch::ScalarType>{}, std::optional<torch::ScalarType>{torch::kHalf}}) {
    const auto y = call(x, w, cast);
    CHECK(g_seen.x_dtype == "Float");
    CHECK(g_seen.mm_dtype == "Float");
    CHECK_FALSE(g_seen.fwd_autocast);
    y.sum().backward();
    CHECK_FALSE(g_seen.bwd_autocast);
    CHECK(dtype_of(x.grad()) == "Float");
    CHECK(torch::allclose(y, x.detach().mm(w.detach())));
  }
}

TEST_CASE("with cast_inputs under autocast, forward sees its floating inputs cast and autocast off") {
  auto x = torch::randn({4, 3}, torch::requires_grad());
  auto w = torch::randn({3, 2}, torch::requires_grad());
  torch::Tensor y;
  {
    amp::Autocast ac(torch::kCPU, torch::kHalf);
    const auto x16 = x.to(torch::kHalf);  // a 16-bit activation arriving from an autocast op
    y = call(x16, w, torch::kFloat);
    CHECK(at::autocast::is_autocast_enabled(torch::kCPU));  // restored once forward returned
  }
  CHECK_FALSE(g_seen.fwd_autocast);
  CHECK(g_seen.x_dtype == "Float");
  CHECK(g_seen.w_dtype == "Float");
  CHECK(g_seen.scale_dtype == "Double");  // float64 is never cast
  CHECK(g_seen.mm_dtype == "Float");      // autocast off: mm stays in fp32
  CHECK(dtype_of(y) == "Float");
  y.sum().backward();
  CHECK_FALSE(g_seen.bwd_autocast);  // backward runs as forward did: autocast off
  CHECK(g_seen.bwd_mm_dtype == "Float");
  CHECK(dtype_of(w.grad()) == "Float");
}

TEST_CASE("without cast_inputs forward keeps autocast on and backward runs under the same autocast dtype") {
  auto x = torch::randn({4, 3}, torch::requires_grad());
  auto w = torch::randn({3, 2}, torch::requires_grad());
  torch::Tensor y;
  {
    amp::Autocast ac(torch::kCPU, torch::kHalf);
    y = call(x, w, std::nullopt);
  }
  CHECK(g_seen.fwd_autocast);
  CHECK(g_seen.x_dtype == "Float");  // not cast by the guard...
  CHECK(g_seen.mm_dtype == "Half");  // ...but autocast's mm runs in fp16
  REQUIRE_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));
  y.sum().backward();  // called outside autocast, as the loop should
  CHECK(g_seen.bwd_autocast);
  CHECK(g_seen.bwd_autocast_dtype == "Half");
  CHECK(g_seen.bwd_mm_dtype == "Half");
  CHECK_FALSE(at::autocast::is_autocast_enabled(torch::kCPU));  // and the state is restored afterwards
  CHECK(dtype_of(w.grad()) == "Float");  // autograd casts the grad back to the fp32 leaf's dtype
}

TEST_CASE("without CustomBwd, a mixed-dtype backward of an autocast forward is refused by mm") {
  // The failure custom_bwd exists to prevent: backward outside autocast meets fp16 grads and fp32 inputs.
  struct Unguarded : torch::autograd::Function<Unguarded> {
    static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor w) {
      amp::CustomFwd amp_fwd(ctx, torch::kCPU);
      ctx->save_for_backward({x, w});
      return x.mm(w);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grad) {
      const auto saved = ctx->get_saved_variables();
      return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
    }
  };
  auto x = torch::randn({4, 3}, torch::requires_grad());
  auto w = torch::randn({3, 2}, torch::requires_grad());
  torch::Tensor y;
  {
    amp::Autocast ac(torch::kCPU, torch::kHalf);
    y = Unguarded::apply(x, w);
  }
  REQUIRE(dtype_of(y) == "Half");
  CHECK_THROWS(y.sum().backward());
}

TEST_CASE("a backward whose forward made no CustomFwd is a clear error") {
  struct NoFwd : torch::autograd::Function<NoFwd> {
    static torch::Tensor forward(AutogradContext*, torch::Tensor x) { return x * 2; }
    static variable_list backward(AutogradContext* ctx, variable_list grad) {
      amp::CustomBwd amp_bwd(ctx, torch::kCPU);
      return {grad[0] * 2};
    }
  };
  auto x = torch::randn({3}, torch::requires_grad());
  CHECK_THROWS_WITH(NoFwd::apply(x).sum().backward(),
                    doctest::Contains("did not construct an amp::CustomFwd"));
}

}  // namespace test_custom_function
