// Lab 12: custom autograd functions under autocast (PyTorch's AMP examples, "Custom autograd functions";
// Q12), with amp::CustomFwd / amp::CustomBwd, the C++ form of torch.amp.custom_fwd / custom_bwd.
//
// Part 1, a function that needs fp32: the row norms sqrt(sum(h^2)) of a layer's activations, with a
// hand-written backward (dh = dn * h / n). Under fp16 autocast the activations arrive in fp16; a few reach
// a few hundred, and squaring them (or summing the squares) exceeds fp16's 65504. The lab runs it as a
// plain custom function and guarded with CustomFwd(cast_inputs=fp32) + CustomBwd, against float64.
// Part 2, a function with inputs of mixed dtypes: y = a.mm(b) with a hand-written backward, a an fp16
// activation and b an fp32 weight. CustomFwd (no cast_inputs) runs forward under autocast; CustomBwd runs
// backward under the same autocast state, so its mm calls see matching dtypes again.
//
// Run alone:  build/bin/lab12_custom_autograd [--device cpu|cuda] [--quick] [--flip] [--json]
// (fp16 whatever --dtype says: the 16-bit type with the narrow range)
// --flip: the guards are left out of the functions that should have them (no cast_inputs, no CustomBwd).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/custom_function.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kIn = 64, kWidth = 512;  // activations h = x @ w, kWidth per row
constexpr double kActStd = 120.0;          // activation scale: some |h| pass 256, whose square passes 65504
constexpr double kTol = 1e-2;              // guarded fp16 vs float64, relative (fp16 rounds to ~5e-4)

// Row norms with an explicit backward; guarded: CustomFwd(cast_inputs=fp32) + CustomBwd.
template <bool kGuarded>
struct RowNorm : torch::autograd::Function<RowNorm<kGuarded>> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor h) {
    std::optional<amp::CustomFwd> fwd;
    if (kGuarded) {
      fwd.emplace(ctx, h.device().type(), /*cast_inputs=*/torch::kFloat);
      h = fwd->cast(h);
    }
    const auto n = (h * h).sum(/*dim=*/1).sqrt();
    ctx->save_for_backward({h, n});
    return n;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    std::optional<amp::CustomBwd> bwd;
    const auto saved = ctx->get_saved_variables();
    if (kGuarded) bwd.emplace(ctx, saved[0].device().type());
    return {grad[0].unsqueeze(1) * saved[0] / saved[1].unsqueeze(1)};
  }
};

// a.mm(b) with an explicit backward; CustomFwd always (no cast_inputs), CustomBwd only when guarded.
template <bool kGuarded>
struct MatMul : torch::autograd::Function<MatMul<kGuarded>> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
    amp::CustomFwd fwd(ctx, a.device().type());
    ctx->save_for_backward({a, b});
    return a.mm(b);  // under autocast: both cast to the autocast dtype
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    std::optional<amp::CustomBwd> bwd;
    if (kGuarded) bwd.emplace(ctx, saved[0].device().type());
    return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
  }
};

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a.to(torch::kDouble) - b).norm() / b.norm()).item<double>();
}
double non_finite_share(const torch::Tensor& t) { return 1.0 - torch::isfinite(t).to(torch::kDouble).mean().item<double>(); }

struct Out {
  torch::Tensor value, grad;  // the function's output and d(sum)/dw
  std::string error;          // set when backward was refused
};

// loss = fn(x @ w).sum() with w a leaf; fp16: under autocast. `fn` gets the activations.
template <class Fn>
Out run_through(Fn fn, const torch::Tensor& x, const torch::Tensor& w, bool fp16) {
  const auto leaf = w.detach().clone().requires_grad_(true);
  Out o;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/fp16);
    o.value = fn(x.mm(leaf), leaf);
  }
  try {
    o.value.sum().backward();
    o.grad = leaf.grad();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    o.error = what.substr(0, std::min(what.find('\n'), what.find(", but")));
  }
  return o;
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("custom-autograd", "Guard custom autograd functions: cast_inputs for fp32 math, the forward's autocast for backward");
  const torch::Device dev = ctx.device;
  r.note("dtypes: fp32 weights; fp16 autocast; float64 reference; amp::CustomFwd/CustomBwd = torch.amp.custom_fwd/custom_bwd");
  if (ctx.flip) r.note("FLIP: the guarded functions lose their guards (no cast_inputs, no CustomBwd)");
  const bool guard = !ctx.flip;
  const int64_t rows = ctx.size(256, 1024, 32);
  const auto x = torch::randn({rows, kIn}, torch::device(dev));
  const auto w = torch::randn({kIn, kWidth}, torch::device(dev)) * (kActStd / std::sqrt(double(kIn)));

  // Part 1: row norms.
  auto norm_plain = [](const torch::Tensor& h, const torch::Tensor&) { return RowNorm<false>::apply(h); };
  auto norm_guarded = [guard](const torch::Tensor& h, const torch::Tensor&) {
    return guard ? RowNorm<true>::apply(h) : RowNorm<false>::apply(h);
  };
  const Out ref = run_through(norm_plain, x.to(torch::kDouble), w.to(torch::kDouble), false);
  const Out f32 = run_through(norm_plain, x, w, false);
  const Out plain = run_through(norm_plain, x, w, true);
  const Out guarded = run_through(norm_guarded, x, w, true);
  const double h_max = x.mm(w).abs().max().item<double>();
  r.section(fmt::format("Row norms of h = x @ w ({} rows of {}; largest |h| {:.0f}), under fp16 autocast", rows, kWidth, h_max));
  auto& t = r.table("", {"function", "output dtype", "non-finite outputs", "output vs fp64", "non-finite grads", "grad vs fp64"});
  auto row = [&](const char* name, const Out& o) {
    const bool ok = o.error.empty() && o.grad.defined();
    t.row({name, lab::short_name(o.value.scalar_type()), lab::percent(non_finite_share(o.value)), lab::sci(rel(o.value, ref.value)),
           ok ? lab::percent(non_finite_share(o.grad)) : "refused", ok ? lab::sci(rel(o.grad, ref.grad)) : "-"});
  };
  row("fp32, no autocast", f32);
  row("plain custom function", plain);
  row(guard ? "CustomFwd(cast_inputs=fp32)" : "(flip) plain again", guarded);
  const double plain_bad = non_finite_share(plain.value), guarded_out_err = rel(guarded.value, ref.value);
  const double guarded_grad_err = guarded.grad.defined() ? rel(guarded.grad, ref.grad) : INFINITY;
  r.observe("largest_activation", "largest |h|", h_max, "", fmt::format("{:.0f}", h_max));
  r.observe("plain_non_finite", "plain function under fp16: non-finite outputs", 100 * plain_bad, "%");
  const double plain_grad_err = rel(plain.grad, ref.grad);
  r.observe("plain_grad_error", "plain function under fp16: gradients vs float64 (relative)", plain_grad_err, "",
            lab::sci(plain_grad_err));
  r.observe("guarded_output_error", "guarded: outputs vs float64 (relative)", guarded_out_err, "", lab::sci(guarded_out_err));
  r.observe("guarded_grad_error", "guarded: gradients vs float64 (relative)", guarded_grad_err, "", lab::sci(guarded_grad_err));
  r.observe("fp32_output_error", "fp32: outputs vs float64 (relative)", rel(f32.value, ref.value), "", lab::sci(rel(f32.value, ref.value)));

  // Part 2: a matmul whose inputs arrive as fp16 (an activation) and fp32 (a weight).
  auto mm_guarded = [guard](const torch::Tensor& h, const torch::Tensor& leaf) {
    const auto b = leaf.narrow(/*dim=*/1, 0, kIn);  // a kIn x kIn fp32 block of the weight
    const auto a = h.narrow(/*dim=*/1, 0, kIn) * (1.0 / kActStd);  // an fp16 activation of unit scale
    return guard ? MatMul<true>::apply(a, b) : MatMul<false>::apply(a, b);
  };
  auto mm_unguarded = [](const torch::Tensor& h, const torch::Tensor& leaf) {
    return MatMul<false>::apply(h.narrow(/*dim=*/1, 0, kIn) * (1.0 / kActStd), leaf.narrow(/*dim=*/1, 0, kIn));
  };
  const Out mm_ref = run_through(mm_unguarded, x.to(torch::kDouble), w.to(torch::kDouble), false);
  const Out mm_plain = run_through(mm_unguarded, x, w, true);
  const Out mm_guard = run_through(mm_guarded, x, w, true);
  r.section("y = a.mm(b): a an fp16 activation, b an fp32 weight, under fp16 autocast");
  auto& t2 = r.table("", {"backward", "ran", "grad vs fp64"});
  t2.row({"CustomFwd only", mm_plain.error.empty() ? "yes" : "no: " + mm_plain.error,
          mm_plain.error.empty() ? lab::sci(rel(mm_plain.grad, mm_ref.grad)) : "-"});
  t2.row({guard ? "CustomFwd + CustomBwd" : "(flip) CustomFwd only", mm_guard.error.empty() ? "yes" : "no: " + mm_guard.error,
          mm_guard.error.empty() ? lab::sci(rel(mm_guard.grad, mm_ref.grad)) : "-"});
  const double mm_err = mm_guard.error.empty() ? rel(mm_guard.grad, mm_ref.grad) : INFINITY;
  r.observe("mixed_backward_refused", "without CustomBwd, backward refused", !mm_plain.error.empty(), "",
            mm_plain.error.empty() ? "no" : "yes");
  r.observe("mixed_grad_error", "with CustomBwd: gradients vs float64 (relative)", mm_err, "", lab::sci(mm_err));

  r.check("without a guard, fp16 overflows inside the function: its outputs are inf/NaN",
          plain_bad >= 0.5, fmt::format("{} of the outputs non-finite (need >= 50%)", lab::percent(plain_bad)));
  r.check("with cast_inputs=fp32, outputs and gradients match float64 and are finite",
          guarded_out_err <= kTol && guarded_grad_err <= kTol && non_finite_share(guarded.value) == 0,
          fmt::format("outputs {}, gradients {} from float64 (need <= {})", lab::sci(guarded_out_err),
                      lab::sci(guarded_grad_err), lab::sci(kTol, 1)));
  r.check("with CustomBwd, the mixed-dtype backward runs under the forward's autocast and matches float64",
          mm_guard.error.empty() && mm_err <= kTol,
          mm_guard.error.empty() ? fmt::format("gradients {} from float64", lab::sci(mm_err)) : "refused: " + mm_guard.error);
  r.takeaway("A custom function that needs fp32 gets CustomFwd(cast_inputs=fp32): its inputs are cast and autocast is "
             "off inside. One that should follow autocast gets CustomFwd and CustomBwd: backward then runs under the "
             "forward's autocast state, and its ops see the dtypes they expect.");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
