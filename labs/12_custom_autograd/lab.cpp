// Lab 12: custom autograd functions under autocast (PyTorch's AMP examples, "Custom autograd functions";
// Q12), with amp::CustomFwd / amp::CustomBwd, the C++ form of torch.amp.custom_fwd / custom_bwd. The AMP
// code is in amp.cpp.
//
// Part 1, a function that needs fp32: the row norms sqrt(sum(h^2)) of a layer's activations, with a
// hand-written backward (dh = dn * h / n). Under fp16 autocast the activations arrive in fp16, and a row's
// sum of squares passes fp16's 65504 (a few values are large too). The lab runs it as a plain custom
// function, on values clipped below 256 as well, and guarded with CustomFwd(cast_inputs=fp32) + CustomBwd,
// against float64.
// Part 2, a function with inputs of mixed dtypes: y = a.mm(b) with a hand-written backward, a an fp16
// activation and b an fp32 weight. Forward runs under autocast; without a guard backward runs outside it and
// its mm calls meet fp16 and fp32; with CustomFwd + CustomBwd backward runs under the forward's autocast.
//
// Run:  build/bin/lab12_custom_autograd [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16: the 16-bit type with the narrow range; the lab refuses --dtype)
// That the unguarded function overflows follows from the data (activations of std 120, rows of 512): the
// lab shows it (plain_non_finite, clipped_non_finite, row_sumsq_min), it does not check it.
// The checks compare with references the lab computes itself (judge.cpp): RowNormFp32 on an fp16 leaf h
// against the float64 norms and gradients of that same h in closed form (an fp32 computation lands within
// 1e-5, a bf16 one or fp16's overflow do not); MatMulAutocast's gradients against float64 with forward under
// autocast and backward outside it, and with forward outside autocast and backward inside an fp16 autocast
// region (CustomBwd keeps forward's state, autocast off: fp32, within 1e-5; without it mm runs in fp16); and
// the dtype of MatMulAutocast's output (fp16 under autocast: it follows autocast, no cast_inputs). A missing
// CustomBwd in RowNormFp32 is not checked: its backward (mul, div) holds no op autocast casts, so it computes
// alike in any autocast state.
// --flip: the guarded runs take the functions without guards (RowNormPlain, MatMulPlain below): checks
//         cast-inputs-matches-fp64, custom-bwd-mixed-dtypes, custom-bwd-forward-state and
//         custom-fwd-follows-autocast (MatMulPlain's backward is refused under autocast) fail.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 64, kWidth = 512;  // activations h = x @ w, kWidth per row
constexpr double kActStd = 120.0;          // activation scale: a row's sum of squares is ~7e6
constexpr double kClip = 255.0;            // below sqrt(65504) = 255.9: no single square overflows fp16
constexpr double kFp16Max = 65504.0;       // fp16's largest finite value
constexpr double kTol = 1e-2;              // guarded fp16 vs float64, relative (fp16 rounds to ~5e-4)
constexpr double kFp32Tol = 1e-5;          // computed in fp32 vs float64 (fp32 ~1e-7; bf16 ~2e-3, fp16 ~5e-4)

using namespace lab12;
using judge::Out;

// ---- The same functions without guards ------------------------------------------------------------------

struct RowNormPlain : torch::autograd::Function<RowNormPlain> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor h) {
    const auto n = (h * h).sum(/*dim=*/1).sqrt();  // in h's dtype: fp16 under autocast
    ctx->save_for_backward({h, n});
    return n;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    return {grad[0].unsqueeze(1) * saved[0] / saved[1].unsqueeze(1)};
  }
};

struct MatMulPlain : torch::autograd::Function<MatMulPlain> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
    ctx->save_for_backward({a, b});
    return a.mm(b);  // under autocast (the caller's): both cast to fp16
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();  // a fp16, b fp32; backward runs outside autocast
    return {grad[0].mm(saved[1].t()), saved[0].t().mm(grad[0])};
  }
};

// ---- measure -----------------------------------------------------------------------------------------

struct Result {
  lab::Context ctx;
  int64_t rows = 0;
  double h_max = 0, over_clip_share = 0;   // largest |h|; share of |h| above kClip
  torch::Tensor row_sum_sq;                // each row's sum of squares, float64
  torch::ScalarType sum_dtype;             // what sum() of fp16 squares gives under this device's autocast
  Out ref, fp32, plain, clipped, guarded;  // part 1 (clipped: plain on values clipped at +-kClip)
  Out mm_ref, mm_plain, mm_guarded;        // part 2
  judge::CheckedRuns checked;              // the checks' runs and their float64 references (judge.cpp)
};

// loss = fn(x @ w, w).sum() with w a leaf; fp16: under autocast. `fn` gets the activations and the leaf.
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
    judge::record_refusal(o, e);
  }
  return o;
}

// Part 2's inputs from the activations: a, an fp16 activation of unit scale; b, a kIn x kIn fp32 block.
template <class MatMul>
torch::Tensor mixed_mm(const torch::Tensor& h, const torch::Tensor& leaf) {
  return MatMul::apply(h.narrow(/*dim=*/1, 0, kIn) * (1.0 / kActStd), leaf.narrow(/*dim=*/1, 0, kIn));
}

// The runs the report shows: the data's range, and each function on h = x @ w with and without autocast.
void measure_shown_runs(const lab::Context& ctx, const torch::Tensor& x, const torch::Tensor& w, Result& r) {
  const auto h64 = x.to(torch::kDouble).mm(w.to(torch::kDouble));
  r.h_max = h64.abs().max().item<double>();
  r.over_clip_share = (h64.abs() > kClip).to(torch::kDouble).mean().item<double>();
  r.row_sum_sq = h64.pow(2).sum(/*dim=*/1);
  {
    amp::Autocast ac(ctx.device, torch::kHalf);
    const auto h = x.mm(w);
    r.sum_dtype = (h * h).sum(/*dim=*/1).scalar_type();  // CPU: fp16 (not on its lists); CUDA: fp32
  }

  auto plain = [](const torch::Tensor& h, const torch::Tensor&) { return RowNormPlain::apply(h); };
  auto clipped = [](const torch::Tensor& h, const torch::Tensor&) {
    return RowNormPlain::apply(h.clamp(-kClip, kClip));
  };
  auto guarded = [flip = ctx.flip](const torch::Tensor& h, const torch::Tensor&) {
    return flip ? RowNormPlain::apply(h) : RowNormFp32::apply(h);
  };
  r.ref = run_through(plain, x.to(torch::kDouble), w.to(torch::kDouble), false);
  r.fp32 = run_through(plain, x, w, false);
  r.plain = run_through(plain, x, w, true);
  r.clipped = run_through(clipped, x, w, true);
  r.guarded = run_through(guarded, x, w, true);

  auto mm_guarded = [flip = ctx.flip](const torch::Tensor& h, const torch::Tensor& leaf) {
    return flip ? mixed_mm<MatMulPlain>(h, leaf) : mixed_mm<MatMulAutocast>(h, leaf);
  };
  r.mm_ref = run_through(mixed_mm<MatMulPlain>, x.to(torch::kDouble), w.to(torch::kDouble), false);
  r.mm_plain = run_through(mixed_mm<MatMulPlain>, x, w, true);
  r.mm_guarded = run_through(mm_guarded, x, w, true);
}

// The checks' runs (judge.cpp) of RowNormFp32 and MatMulAutocast (--flip: the same without guards), on the
// shown runs' activations and part 2's inputs.
void measure_checked_runs(const lab::Context& ctx, const torch::Tensor& x, const torch::Tensor& w,
                          Result& r) {
  judge::Functions fns;
  if (ctx.flip)
    fns = {[](const torch::Tensor& h) { return RowNormPlain::apply(h); },
           [](const torch::Tensor& a, const torch::Tensor& b) { return MatMulPlain::apply(a, b); }};
  else
    fns = {[](const torch::Tensor& h) { return RowNormFp32::apply(h); },
           [](const torch::Tensor& a, const torch::Tensor& b) { return MatMulAutocast::apply(a, b); }};
  const auto a = (x.mm(w) * (1.0 / kActStd)).narrow(/*dim=*/1, 0, kIn), b = w.narrow(/*dim=*/1, 0, kIn);
  r.checked = judge::checked_runs(fns, x, w, a, b);
}

Result measure(const lab::Context& ctx) {
  Result r{.ctx = ctx, .rows = ctx.size(256, 1024, 32)};
  const auto x = torch::randn({r.rows, kIn}, torch::device(ctx.device));
  const auto w = torch::randn({kIn, kWidth}, torch::device(ctx.device)) * (kActStd / std::sqrt(double(kIn)));
  measure_shown_runs(ctx, x, w, r);
  measure_checked_runs(ctx, x, w, r);
  return r;
}

// ---- report ------------------------------------------------------------------------------------------

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a.to(torch::kDouble) - b).norm() / b.norm()).item<double>();
}
double non_finite_share(const torch::Tensor& t) {
  return 1.0 - torch::isfinite(t).to(torch::kDouble).mean().item<double>();
}
bool ran(const Out& o) {
  return o.error.empty() && o.grad.defined();
}
// 7 for bf16, 10 for fp16, 23 for fp32, 52 for float64.
double mantissa_bits(torch::ScalarType t) {
  return t == torch::kBFloat16 ? 7 : t == torch::kHalf ? 10 : t == torch::kFloat ? 23 : 52;
}
double grad_error(const Out& o, const Out& ref) {
  return ran(o) ? rel(o.grad, ref.grad) : std::numeric_limits<double>::infinity();
}

void norm_row(lab::Table& t, const std::string& name, const Out& o, const Out& ref) {
  t.row({name, lab::short_name(o.value.scalar_type()), lab::percent(non_finite_share(o.value)),
         lab::sci(rel(o.value, ref.value), 2), ran(o) ? lab::sci(rel(o.grad, ref.grad), 2) : "refused"});
}

void report_norms(const Result& m, lab::Report& r) {
  r.section(fmt::format("Row norms sqrt(sum(h^2)) in a custom function, h = x @ w ({} rows of {})", m.rows,
                        kWidth));
  auto& t = r.table("", {"function, run", "dtype", "inf/NaN", "out vs fp64", "grad vs fp64"});
  norm_row(t, "plain, fp32, no autocast", m.fp32, m.ref);
  norm_row(t, "plain, fp16 autocast", m.plain, m.ref);
  norm_row(t, fmt::format("plain, fp16 autocast, |h|<={:.0f}", kClip), m.clipped, m.ref);
  r.observe("largest_activation", "largest |h|", m.h_max, "", fmt::format("{:.0f}", m.h_max));
  r.observe("over_clip_share", fmt::format("values with |h| > {:.0f} (alone, h^2 > {:.0f})", kClip, kFp16Max),
            100 * m.over_clip_share, "%", lab::percent(m.over_clip_share, 2));
  const double lo = m.row_sum_sq.min().item<double>(), med = m.row_sum_sq.median().item<double>();
  const double over = (m.row_sum_sq > kFp16Max).to(torch::kDouble).mean().item<double>();
  r.observe("row_sumsq_median", "a row's sum of squares, float64: median", med, "", lab::sci(med, 2));
  r.observe("row_sumsq_min", "a row's sum of squares, float64: smallest", lo, "", lab::sci(lo, 2));
  r.observe("rows_over_fp16_max", fmt::format("rows whose sum of squares exceeds {:.0f}", kFp16Max),
            100 * over, "%", lab::percent(over));
  r.observe("sum_dtype", "sum() of fp16 squares under autocast gives", m.sum_dtype == torch::kHalf ? 16 : 32,
            "", lab::short_name(m.sum_dtype));
}

void report_mixed(const Result& m, lab::Report& r) {
  r.section("y = a.mm(b) in a custom function under fp16 autocast, a fp16, b an fp32 weight");
  auto& t = r.table("", {"function", "backward", "grad vs fp64"});
  t.row({"plain", ran(m.mm_plain) ? "ran" : "refused: " + m.mm_plain.error,
         ran(m.mm_plain) ? lab::sci(grad_error(m.mm_plain, m.mm_ref), 2) : "-"});
}

void report_guarded(const Result& m, lab::Report& r) {
  r.detail_section("The same functions with CustomFwd / CustomBwd, under fp16 autocast");
  r.note(
      m.sum_dtype == torch::kHalf
          ? "sum() of fp16 squares gave fp16 here: CPU autocast leaves sum off its lists, so the sum itself "
            "overflows (CUDA autocast runs sum in fp32, where only the squares of |h| > 255 would)"
          : "sum() of fp16 squares gave fp32 here: CUDA autocast runs sum in fp32, so only the squares of "
            "|h| > 255 overflow (CPU autocast leaves sum in fp16, where the sum itself overflows)");
  auto& t = r.table("", {"function", "dtype", "inf/NaN", "out vs fp64", "grad vs fp64"});
  norm_row(t, m.ctx.flip ? "(flip) plain again" : "CustomFwd(cast_inputs=fp32)", m.guarded, m.ref);
  const double plain_grad_err = grad_error(m.plain, m.ref);
  r.observe("plain_non_finite", "plain function under fp16: non-finite outputs",
            100 * non_finite_share(m.plain.value), "%", lab::percent(non_finite_share(m.plain.value)));
  r.observe("clipped_non_finite", "plain function, |h| clipped: non-finite outputs",
            100 * non_finite_share(m.clipped.value), "%", lab::percent(non_finite_share(m.clipped.value)));
  r.observe("clip_at", "the clipped run's bound on |h|", kClip);
  r.observe("plain_grad_error", "plain function under fp16: gradients vs float64 (relative)", plain_grad_err,
            "", lab::sci(plain_grad_err));
  const double out_err = rel(m.guarded.value, m.ref.value), grad_err = grad_error(m.guarded, m.ref);
  r.observe("guarded_output_error", "guarded: outputs vs float64 (relative)", out_err, "", lab::sci(out_err));
  r.observe("guarded_grad_error", "guarded: gradients vs float64 (relative)", grad_err, "",
            lab::sci(grad_err));
  const double f32_err = rel(m.fp32.value, m.ref.value);
  r.observe("fp32_output_error", "fp32: outputs vs float64 (relative)", f32_err, "", lab::sci(f32_err));
  r.observe("mixed_backward_refused", "y = a.mm(b), plain: backward refused (1 = yes)", !ran(m.mm_plain), "",
            ran(m.mm_plain) ? "no" : "yes");
  auto& t2 = r.table("y = a.mm(b)", {"function", "backward", "grad vs fp64"});
  const double mm_err = grad_error(m.mm_guarded, m.mm_ref);
  t2.row({m.ctx.flip ? "(flip) plain again" : "CustomFwd + CustomBwd",
          ran(m.mm_guarded) ? "ran" : "refused: " + m.mm_guarded.error,
          ran(m.mm_guarded) ? lab::sci(mm_err, 2) : "-"});
  r.observe("mixed_grad_error", "with CustomBwd: gradients vs float64 (relative)", mm_err, "",
            ran(m.mm_guarded) ? lab::sci(mm_err) : "refused");
  const Out& ln = m.checked.leaf_norm;
  r.observe("leaf_output_error", "guarded, on an fp16 leaf h: outputs vs float64 of that h (relative)",
            rel(ln.value, m.checked.leaf_norm_ref.value), "",
            lab::sci(rel(ln.value, m.checked.leaf_norm_ref.value)));
  r.observe("leaf_output_bits", "guarded, on an fp16 leaf h: the outputs' dtype, in bits",
            8 * c10::elementSize(ln.value.scalar_type()), "", lab::short_name(ln.value.scalar_type()));
  r.observe("leaf_non_finite", "guarded, on an fp16 leaf h: non-finite outputs",
            100 * non_finite_share(ln.value), "%", lab::percent(non_finite_share(ln.value)));
  r.observe("mm_bf16_output_bits", "MatMulAutocast under bf16 autocast: its output's mantissa bits",
            mantissa_bits(m.checked.mm_bf16_dtype), "",
            m.checked.bf16 ? lab::short_name(m.checked.mm_bf16_dtype) : "no bf16 here");
  const double st_err = grad_error(m.checked.mm_state, m.checked.mm_state_ref);
  r.observe("state_grad_error",
            "y = a.mm(b), forward outside autocast, backward inside: gradients vs float64 (relative)", st_err,
            "", ran(m.checked.mm_state) ? lab::sci(st_err) : "refused");
}

// The check of RowNormFp32, the function that needs fp32.
void report_norm_check(const Result& m, lab::Report& r) {
  // Catches no cast_inputs, the cast's result unused, and a cast_inputs other than fp32 (fp16 overflows;
  // bf16 is finite but ~2e-3 off; float64 comes back float64): RowNormFp32 on an fp16 leaf h against the
  // float64 closed form on that same h. The gradient goes back to h in fp16, hence kTol.
  // bf16 autocast too, where the device has it: a bf16 h must be computed in fp32 as well. Its gradient goes
  // back to h in bf16: 1.65e-03-1.66e-03 from float64 at seeds 0-49 (2-core AMD EPYC, family 25 model 17),
  // under kTol's 1e-2.
  bool norms_ok = true, refused = false, no_custom_fwd = false;
  std::string norms;
  const std::tuple<const char*, const Out*, const Out*> leaves[] = {
      {"fp16", &m.checked.leaf_norm, &m.checked.leaf_norm_ref},
      {"bf16", &m.checked.leaf_norm_bf16, &m.checked.leaf_norm_bf16_ref}};
  for (const auto& [input, ln, ref] : leaves) {
    if (!ln->value.defined()) continue;  // bf16 on a GPU without it
    const double ln_out = rel(ln->value, ref->value), ln_grad = grad_error(*ln, *ref);
    refused = refused || !ran(*ln);
    no_custom_fwd = no_custom_fwd || ln->no_custom_fwd;
    norms_ok = norms_ok && ln->value.scalar_type() == torch::kFloat && non_finite_share(ln->value) == 0 &&
               ln_out <= kFp32Tol && ln_grad <= kTol;
    norms += fmt::format("{}{} input: output {}, {} non-finite; outputs {}, gradients {} from float64{}",
                         norms.empty() ? "" : "; ", input, lab::short_name(ln->value.scalar_type()),
                         lab::percent(non_finite_share(ln->value)), lab::sci(ln_out),
                         ran(*ln) ? lab::sci(ln_grad) : "-",
                         ran(*ln) ? "" : " (backward refused: " + ln->error + ")");
  }
  r.check(
      "cast-inputs-matches-fp64",
      fmt::format("with cast_inputs=fp32, the norms come back fp32 and finite, within {} of float64 on the "
                  "same fp16 input (and bf16 input), and their gradients within {}",
                  lab::sci(kFp32Tol, 1), lab::sci(kTol, 1)),
      norms_ok, norms, {{"backward_refused", refused}, {"no_custom_fwd", no_custom_fwd}});
}

// The checks of MatMulAutocast, the function that follows autocast: its backward and its output's dtype.
void report_matmul_checks(const Result& m, lab::Report& r) {
  // Catches a MatMulAutocast backward without CustomBwd: outside autocast its mm calls meet fp16 and fp32.
  const double mm_err = grad_error(m.mm_guarded, m.mm_ref);
  r.check("custom-bwd-mixed-dtypes",
          "with CustomBwd, the mixed-dtype backward runs under the forward's autocast and matches float64",
          ran(m.mm_guarded) && mm_err <= kTol,
          ran(m.mm_guarded) ? fmt::format("gradients {} from float64", lab::sci(mm_err))
                            : "refused: " + m.mm_guarded.error,
          {{"backward_refused", !ran(m.mm_guarded)}, {"no_custom_fwd", m.mm_guarded.no_custom_fwd}});
  // Catches a backward that runs in the caller's autocast state rather than the forward's: no CustomBwd,
  // even with its operands cast by hand so that mm accepts them (forward outside autocast, backward inside
  // fp16 autocast: only CustomBwd keeps it fp32).
  const double st_err = grad_error(m.checked.mm_state, m.checked.mm_state_ref);
  r.check("custom-bwd-forward-state",
          "with forward outside autocast and backward inside an fp16 autocast region, CustomBwd runs "
          "MatMulAutocast's backward as forward ran, in fp32: gradients within 1e-5 of float64",
          st_err <= kFp32Tol,
          ran(m.checked.mm_state)
              ? fmt::format("gradients {} from float64 (need <= {})", lab::sci(st_err), lab::sci(kFp32Tol, 1))
              : "refused: " + m.checked.mm_state.error);
  // Catches a cast_inputs given to the function that should follow autocast: its output is then fp32.
  // And a cast_inputs of fp16, which gives fp16 under fp16 autocast too: under bf16 autocast the output
  // must be bf16 (it was at seeds 0-49 on a 2-core AMD EPYC, family 25 model 17). Its backward must follow
  // too (run, not refused), or an unguarded function, which follows autocast in forward only, would hold it.
  const auto mm_dtype = m.mm_guarded.value.scalar_type(), off_dtype = m.checked.mm_state.value.scalar_type();
  r.check(
      "custom-fwd-follows-autocast",
      fmt::format("MatMulAutocast follows autocast: fp16 output under fp16 autocast, {}fp32 outside it, "
                  "and its backward runs under the same state",
                  m.checked.bf16 ? "bf16 under bf16 autocast, " : ""),
      mm_dtype == torch::kHalf && off_dtype == torch::kFloat &&
          (!m.checked.bf16 || m.checked.mm_bf16_dtype == torch::kBFloat16) && ran(m.mm_guarded),
      fmt::format("output {} under fp16 autocast, {}{} outside; backward {}", lab::short_name(mm_dtype),
                  m.checked.bf16 ? lab::short_name(m.checked.mm_bf16_dtype) + " under bf16 autocast, " : "",
                  lab::short_name(off_dtype), ran(m.mm_guarded) ? "ran" : "refused: " + m.mm_guarded.error));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 weights, fp16 autocast, float64 reference");
  r.note("fp16, the 16-bit type with the narrow range (the lab refuses --dtype)");
  if (m.ctx.flip) r.note("FLIP: the guarded functions lose their guards (no CustomFwd, no CustomBwd)");
  report_norms(m, r);
  report_mixed(m, r);
  report_guarded(m, r);
  r.takeaway(
      "A custom function that needs fp32 gets CustomFwd(cast_inputs=fp32) (in Python "
      "torch.amp.custom_fwd(device_type=\"cuda\", cast_inputs=torch.float32)): its inputs are cast and "
      "autocast is off inside. One that should follow autocast gets "
      "CustomFwd and CustomBwd: backward then runs under the forward's autocast state, and its ops see the "
      "dtypes they expect.");
  // Shown, not checked: the data are made to overflow fp16 (see plain_non_finite and row_sumsq_min).
  report_norm_check(m, r);
  report_matmul_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
