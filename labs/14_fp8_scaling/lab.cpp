// Lab 14: FP8 training with a scale per tensor (quiz question 14). The AMP code is in amp.cpp.
//
// Every Linear of a small MLP runs in FP8 the way Transformer Engine (TE) and torchao run it: its input
// and weight are cast to E4M3 and its output gradient to E5M2, each first multiplied by a scale of its
// own (the format's max over the tensor's amax), and the matmuls take the inverse scales; fp32 master
// weights, Adam. The scale comes from this step's amax ("current" scaling) or from the largest amax of
// the last steps ("delayed" scaling, TE's DelayedScaling). The problem is the one of labs 02 and 07
// (src/lab/underflow.h: gradients small by construction), 16 units wide. The lab
//   1. casts the nine tensors of step 0 with no scale, with the best single scale for all of them, with
//      one loss scale (fp16's recipe: only the gradients move) and with a scale each,
//   2. trains with each recipe, against bf16 autocast and against FP8's mantissa rounding without exponent
//      limits (a yardstick),
//   3. shows its emulated FP8 matmul beside at::_scaled_mm on the CPU (a demonstration: without AMX
//      ATen's fallback computes the emulation's own arithmetic, so the two cannot differ there),
//   4. checks quantize() on crafted tensors against the same step written here in float64: both formats'
//      maxima, a margin, a negative amax, an all-zero tensor, and delayed scaling's history (a spike it
//      must clip and then forget after kHistory calls).
// The matmuls are at::_scaled_mm on CUDA devices of compute capability 8.9 or newer (FP8 tensor cores;
// PyTorch's CUDA _scaled_mm refuses older devices: aten/src/ATen/native/cuda/Blas.cpp); elsewhere they
// are emulated as torchao's `emulate` mode does (dequantize, then an fp32 matmul; torchao divides the data
// by its scale, this lab multiplies by the inverse scale, as at::_scaled_mm takes it: the same idea,
// rounded differently). Nothing here is timed.
//
// Run:  build/bin/lab14_fp8_scaling [--device cpu|cuda] [--quick] [--seed N] [--json]
// --flip: every per-tensor scale is 1, so current and delayed scaling cast unscaled. The checks
//         per-tensor-keeps-values and per-tensor-trains fail; the others still hold.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "judge.h"
#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/underflow.h"

namespace {

using namespace lab14;  // the AMP code (amp.h): Fp8Scale, Fp8Layer, the training steps, kHistory
namespace uf = lab::underflow;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kWidth = 16;  // every layer 16 wide: FP8 GEMMs want multiples of 16
// Labs 02 and 07's problem (tiny targets, a mean over 2048 outputs, an output layer at 1% of its init).
constexpr uf::ProblemOptions kProblem{.batch = 128,
                                      .inputs = kWidth,
                                      .hidden = kWidth,
                                      .outputs = kWidth,
                                      .target_std = 1e-3,
                                      .output_init = 1e-2};
constexpr int64_t kSteps = 300, kStepsQuick = 80;  // Adam steps per training run
constexpr double kLr = 3e-3;                       // Adam, the same for every run
constexpr double kMargin = 3;                      // TE's `margin` (default 0); 3 is this lab's choice
constexpr double kLossScale = 65536;               // the one loss scale: GradScaler's start, 2^16, ...
constexpr int64_t kGrowthInterval = 50;            // ... doubled after 50 clean steps (PyTorch: 2000)
// Check thresholds.
constexpr double kMostFlushed = 0.5;    // unscaled, the worst dL/dy loses at least half of its values
constexpr double kFewLost = 0.01;       // with a scale each, no tensor loses more than 1%
constexpr double kOneScaleLost = 0.2;   // the best single scale (and one loss scale) lose 20%+ of a tensor
constexpr double kFailsFactor = 1.5;    // a failing recipe ends at 1.5x bf16's loss or more
constexpr double kTrainsWithin = 1.25;  // per-tensor recipes end at most 1.25x FP8 without exponent limits

// ---- measure ---------------------------------------------------------------------------------------

// FP8's rounding without its exponent limits (a yardstick, not a recipe): inputs and weights rounded to
// E4M3's 4 significant bits, output gradients to E5M2's 3, at any magnitude; fp32 matmuls.
torch::Tensor round_significand(const torch::Tensor& t, int bits) {
  auto [m, e] = torch::frexp(t);  // t = m * 2^e, 0.5 <= |m| < 1
  const double k = std::exp2(bits);
  return torch::ldexp(torch::round(m * k) / k, e);  // round half to even, as the FP8 casts do
}

struct NoLimitLinear : torch::autograd::Function<NoLimitLinear> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    const torch::Tensor xr = round_significand(x.detach(), 4), wr = round_significand(w.detach(), 4);
    ctx->save_for_backward({xr, wr});
    return xr.matmul(wr.t()) + b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const torch::Tensor g = round_significand(grads[0], 3);
    return {g.matmul(s[1]), g.t().matmul(s[0]), grads[0].sum(0)};
  }
};

// The nine tensors the FP8 Linears cast, in this order: layer inputs, weights, output gradients.
const char* const kNames[] = {"x", "h1", "h2", "W1", "W2", "W3", "dL/dy1", "dL/dy2", "dL/dy3"};
constexpr size_t kW3 = 5;

struct Step0Tensor {
  std::string name;
  bool grad = false;  // an output gradient (E5M2); else a layer input or a weight (E4M3)
  torch::Tensor t;
  double amax = 0;
  double flushed_none = 0, beyond_none = 0;  // shares of the nonzero values, cast without a scale
  double lost_loss_scale = 0, lost_own = 0;  // ... with one loss scale, with a scale of its own
};

struct Fp8Run {
  double final_loss = 0;
  int64_t skipped = 0;
  double final_scale = 1;                      // the loss scale at the end (1: no loss scale)
  std::vector<std::vector<double>> saturated;  // per tensor (kNames order), the share clipped per step
  double w3_lost_at_end = 0;                   // W3's share lost by an unscaled E4M3 cast after training
};

struct Emulation {
  int products = 0, bitwise = 0;
  double worst_vs_bound = 0;  // max |emulated - _scaled_mm| over the fp32 accumulation bound
};

// A format's limits, decoded from its bit patterns.
struct Format {
  float max = 0, min_normal = 0, min_subnormal = 0, spacing_at_1 = 0;
  double span() const { return std::log2(max / min_subnormal); }  // powers of two it holds
};

template <class F>
Format decode(uint8_t max_bits, uint8_t min_normal_bits, uint8_t one_bits) {
  auto v = [](uint8_t bits) { return static_cast<float>(F(bits, F::from_bits())); };
  return {v(max_bits), v(min_normal_bits), v(0x01), v(one_bits + 1) - v(one_bits)};
}

struct Result {
  lab::Context ctx;
  Format e4m3 = decode<c10::Float8_e4m3fn>(0x7E, 0x08, 0x38),
         e5m2 = decode<c10::Float8_e5m2>(0x7B, 0x04, 0x3C);
  bool limits_agree = false;  // std::numeric_limits gives the same max and smallest subnormal
  // Plain casts past each format's max, on the device: E4M3 of kPastE4M3 and of inf, E5M2 of kPastE5M2.
  float e4m3_past = 0, e4m3_inf = 0, e5m2_past = 0;
  int64_t steps = 0;
  std::vector<Step0Tensor> tensors;  // kNames order
  int best_exp = 0;                  // the best single scale for all nine tensors, 2^best_exp, ...
  double best_lost = 0;              // ... still loses this share ...
  std::string best_worst;            // ... of this tensor
  double fp32 = 0, bf16 = 0, no_limit = 0;
  Fp8Run none, loss_scale, current, delayed, delayed_margin;
  Emulation emu;
  judge::QuantizeVerdict quantize;  // quantize() on crafted tensors (judge.cpp)
};

constexpr float kPastE4M3 = 1000, kPastE5M2 = 1e5;  // past E4M3's 448 and E5M2's 57344

// What a plain, unscaled cast makes of values past each format's max.
void cast_past_max(Result& m, torch::Device device) {
  const torch::Tensor v =
      torch::tensor({kPastE4M3, std::numeric_limits<float>::infinity(), kPastE5M2}, torch::device(device));
  const torch::Tensor e4 = v.to(torch::kFloat8_e4m3fn).to(torch::kFloat).cpu();
  const torch::Tensor e5 = v.to(torch::kFloat8_e5m2).to(torch::kFloat).cpu();
  m.e4m3_past = e4[0].item<float>(), m.e4m3_inf = e4[1].item<float>(), m.e5m2_past = e5[2].item<float>();
}

// Of t's nonzero values, the shares that (t * scale) cast to FP8 flushes to zero and puts beyond max.
std::pair<double, double> lost_in_cast(const torch::Tensor& t, double scale, bool grad) {
  const torch::Tensor v = t.to(torch::kFloat) * scale, nz = t != 0;
  const double n = std::max(1.0, nz.sum().item<double>());
  const torch::Tensor cast = v.to(grad ? torch::kFloat8_e5m2 : torch::kFloat8_e4m3fn);
  return {(nz & (cast == 0)).sum().item<double>() / n,
          (v.abs() > (grad ? kE5M2Max : kE4M3Max)).sum().item<double>() / n};
}

double lost_share(const torch::Tensor& t, double scale, bool grad) {
  const auto [flushed, beyond] = lost_in_cast(t, scale, grad);
  return flushed + beyond;
}

// The nine tensors of step 0, from an fp32 pass of the same MLP.
std::vector<Step0Tensor> step0_tensors(const uf::Problem& problem) {
  Params p = uf::copy_params(problem.init);
  std::vector<torch::Tensor> in, out;
  torch::Tensor h = problem.x;
  for (size_t i = 0; i < 3; ++i) {
    in.push_back(h);
    out.push_back(torch::linear(h, p[2 * i], p[2 * i + 1]));
    out.back().retain_grad();
    h = i < 2 ? torch::tanh(out.back()) : out.back();
  }
  torch::mse_loss(h, problem.y).backward();
  std::vector<Step0Tensor> ts;
  for (size_t i = 0; i < 9; ++i) {
    const torch::Tensor t = i < 3 ? in[i] : i < 6 ? p[2 * (i - 3)] : out[i - 6].grad();
    ts.push_back({.name = kNames[i], .grad = i >= 6, .t = t.detach().clone()});
  }
  return ts;
}

// Each step-0 tensor cast four ways; then the one scale 2^k for all nine whose worst tensor loses least.
void cast_step0(Result& m, const uf::Problem& problem) {
  m.tensors = step0_tensors(problem);
  for (auto& s : m.tensors) {
    s.amax = s.t.abs().max().item<double>();
    std::tie(s.flushed_none, s.beyond_none) = lost_in_cast(s.t, 1.0, s.grad);
    s.lost_loss_scale = lost_share(s.t, s.grad ? kLossScale : 1.0, s.grad);  // only gradients see it
    Fp8Scale own = judge::scale_for(s.grad, m.ctx.flip ? Scaling::None : Scaling::Current);
    const torch::Tensor q = own.quantize(s.t).first.to(torch::kFloat), nz = s.t != 0;
    s.lost_own = ((nz & ((q == 0) | ~torch::isfinite(q))).sum() / nz.sum().clamp_min(1)).item<double>();
  }
  m.best_lost = 2;
  for (int k = -20; k <= 50; ++k) {
    double worst = 0;
    std::string who;
    for (const auto& s : m.tensors) {
      const double lost = lost_share(s.t, std::exp2(k), s.grad);
      if (lost > worst) worst = lost, who = s.name;
    }
    if (worst < m.best_lost) m.best_lost = worst, m.best_exp = k, m.best_worst = who;
  }
}

Fp8Run train_fp8(const uf::Problem& problem, Scaling mode, bool loss_scale, int64_t steps,
                 double margin = 0) {
  Fp8Run run;
  run.saturated.resize(mode == Scaling::Delayed ? 9 : 0);
  std::vector<Fp8Layer> layers(3);
  for (size_t i = 0; i < layers.size(); ++i) {
    Fp8Scale* scales[] = {&layers[i].x, &layers[i].w, &layers[i].g};
    for (size_t r = 0; r < 3; ++r) {
      scales[r]->mode = mode;
      scales[r]->margin = margin;
      if (!run.saturated.empty()) scales[r]->saturated = &run.saturated[3 * r + i];
    }
  }
  Params p = uf::copy_params(problem.init);
  torch::optim::Adam opt(p, torch::optim::AdamOptions(kLr));
  amp::GradScaler scaler(
      problem.x.device(),
      {.init_scale = kLossScale, .growth_interval = kGrowthInterval, .enabled = loss_scale});
  for (int64_t i = 0; i < steps; ++i)
    run.skipped += !fp8_train_step(p, opt, scaler, layers, problem.x, problem.y);
  run.final_loss = uf::eval_loss(p, problem);
  run.final_scale = scaler.get_scale();
  run.w3_lost_at_end = lost_share(p[4].detach(), 1.0, /*grad=*/false);
  return run;
}

// The yardsticks' step, written here, not in amp.cpp: the same MLP under autocast to dtype (kBFloat16), or
// in fp32 when dtype is kFloat. The checks divide by the loss it reaches, so a learner's file must not be
// able to move it (exercise 14's file replaces amp.cpp).
void yardstick_step(Params& p, torch::optim::Optimizer& opt, torch::ScalarType dtype, const torch::Tensor& x,
                    const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);  // linear: bf16
    torch::Tensor h = torch::tanh(torch::linear(x, p[0], p[1]));
    h = torch::tanh(torch::linear(h, p[2], p[3]));
    loss = torch::mse_loss(torch::linear(h, p[4], p[5]), y);
  }
  loss.backward();  // bf16 has fp32's exponent range: no loss scale
  opt.step();
}

double train_autocast(const uf::Problem& problem, torch::ScalarType dtype, int64_t steps) {
  Params p = uf::copy_params(problem.init);
  torch::optim::Adam opt(p, torch::optim::AdamOptions(kLr));
  for (int64_t i = 0; i < steps; ++i) yardstick_step(p, opt, dtype, problem.x, problem.y);
  return uf::eval_loss(p, problem);
}

double train_no_limit(const uf::Problem& problem, int64_t steps) {
  Params p = uf::copy_params(problem.init);
  torch::optim::Adam opt(p, torch::optim::AdamOptions(kLr));
  for (int64_t i = 0; i < steps; ++i) {
    opt.zero_grad();
    torch::Tensor h = torch::tanh(NoLimitLinear::apply(problem.x, p[0], p[1]));
    h = torch::tanh(NoLimitLinear::apply(h, p[2], p[3]));
    torch::mse_loss(NoLimitLinear::apply(h, p[4], p[5]), problem.y).backward();
    opt.step();
  }
  return uf::eval_loss(p, problem);
}

// The emulated FP8 matmul against at::_scaled_mm on the CPU, on the nine matmuls of step 0 (each
// layer's forward, input-gradient and weight-gradient product), operands cast with current scales.
Emulation emulation_vs_scaled_mm(const std::vector<Step0Tensor>& ts) {
  Emulation e;
  auto q = [&](size_t i) { return judge::scale_for(ts[i].grad, Scaling::Current).quantize(ts[i].t.cpu()); };
  for (size_t l = 0; l < 3; ++l) {
    const auto x = q(l), w = q(3 + l), g = q(6 + l);
    const std::pair<torch::Tensor, torch::Tensor> products[][2] = {
        {x, {w.first.t(), w.second}}, {g, w}, {{g.first.t(), g.second}, x}};
    for (const auto& [a, b] : products) {
      const torch::Tensor emulated = fp8_mm_emulated(a.first, a.second, b.first, b.second);
      const torch::Tensor ref = at::_scaled_mm(a.first.contiguous(), b.first.t().contiguous().t(), a.second,
                                               b.second, {}, {}, torch::kFloat);
      // |fl(sum) - sum| <= (K + 4) u sum |a b|, u = 2^-24: K additions and the scalings' roundings.
      const auto dequantized = [](const std::pair<torch::Tensor, torch::Tensor>& o) {
        return (o.first.to(torch::kDouble) * o.second.item<double>()).abs();
      };
      const double k = static_cast<double>(a.first.size(1));
      const torch::Tensor bound = (k + 4) * std::exp2(-24) * dequantized(a).matmul(dequantized(b));
      const torch::Tensor diff = (emulated.to(torch::kDouble) - ref.to(torch::kDouble)).abs();
      e.products++;
      e.bitwise += torch::equal(emulated, ref);
      e.worst_vs_bound = std::max(e.worst_vs_bound, (diff / bound.clamp_min(1e-300)).max().item<double>());
    }
  }
  return e;
}

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .steps = ctx.size(kSteps, kSteps, kStepsQuick)};
  const uf::Problem problem = uf::make_problem(kProblem, ctx.device);
  using E4 = std::numeric_limits<c10::Float8_e4m3fn>;
  using E5 = std::numeric_limits<c10::Float8_e5m2>;
  m.limits_agree = m.e4m3.max == float(E4::max()) && m.e4m3.min_subnormal == float(E4::denorm_min()) &&
                   m.e5m2.max == float(E5::max()) && m.e5m2.min_subnormal == float(E5::denorm_min());
  cast_past_max(m, ctx.device);
  cast_step0(m, problem);
  m.emu = emulation_vs_scaled_mm(m.tensors);
  m.quantize = judge::judge_quantize();
  const Scaling current = ctx.flip ? Scaling::None : Scaling::Current;
  const Scaling delayed = ctx.flip ? Scaling::None : Scaling::Delayed;
  m.fp32 = train_autocast(problem, torch::kFloat, m.steps);
  m.bf16 = train_autocast(problem, torch::kBFloat16, m.steps);
  m.no_limit = train_no_limit(problem, m.steps);
  m.none = train_fp8(problem, Scaling::None, /*loss_scale=*/false, m.steps);
  m.loss_scale = train_fp8(problem, Scaling::None, /*loss_scale=*/true, m.steps);
  m.current = train_fp8(problem, current, false, m.steps);
  m.delayed = train_fp8(problem, delayed, false, m.steps);
  m.delayed_margin = train_fp8(problem, delayed, false, m.steps, kMargin);
  return m;
}

// ---- report ----------------------------------------------------------------------------------------

std::string pow2(double v) {
  const double e = std::log2(v);
  return e == std::round(e) ? fmt::format("2^{:g}", e) : fmt::format("2^{:.1f}", e);
}
std::string times(double ratio) {
  return fmt::format("{:.{}f}x", ratio, ratio >= 100 ? 0 : 2);
}

// The largest share one cast of a delayed run clipped, with the tensor and the step.
struct Clipped {
  double share = 0;
  std::string tensor = "none";
  size_t step = 0;
};
Clipped worst_clipped(const Fp8Run& run) {
  Clipped c;
  for (size_t i = 0; i < run.saturated.size(); ++i)
    for (size_t s = 0; s < run.saturated[i].size(); ++s)
      if (run.saturated[i][s] > c.share) c = {run.saturated[i][s], kNames[i], s};
  return c;
}

// The smallest and largest amax of the step-0 tensors, with their names.
std::tuple<double, std::string, double, std::string> amax_extremes(const Result& m) {
  const auto [lo, hi] = std::minmax_element(m.tensors.begin(), m.tensors.end(),
                                            [](const auto& a, const auto& b) { return a.amax < b.amax; });
  return {lo->amax, lo->name, hi->amax, hi->name};
}

// Powers of two between the largest value of the format the largest amax is cast to and the smallest
// subnormal of the format the smallest amax is cast to: all that one factor can fit both into.
double room(const Result& m) {
  const auto [lo, hi] = std::minmax_element(m.tensors.begin(), m.tensors.end(),
                                            [](const auto& a, const auto& b) { return a.amax < b.amax; });
  return std::log2((hi->grad ? m.e5m2 : m.e4m3).max / (lo->grad ? m.e5m2 : m.e4m3).min_subnormal);
}

std::string path_note(const lab::Context& ctx) {
  if (!ctx.cuda()) return "FP8 matmuls emulated on the CPU (at::_scaled_mm's CPU result); not timed";
  const int cc = amp::cuda_compute_capability();
  if (cc >= 89)
    return fmt::format(
        "FP8 matmuls: at::_scaled_mm on the FP8 tensor cores of {} (capability {}.{}); not timed",
        amp::cuda_device_name(), cc / 10, cc % 10);
  return fmt::format(
      "FP8 matmuls emulated on {}: FP8 tensor cores need capability 8.9, it has {}.{}; not timed",
      amp::cuda_device_name(), cc / 10, cc % 10);
}

// Before the question: the step-0 casts and the training runs, under neutral labels.
void report_measured(const Result& m, lab::Report& r) {
  r.dtypes("E4M3 and E5M2", "fp32 master weights, FP8 matmul operands, a bf16 autocast yardstick");
  if (m.ctx.flip) r.note("FLIP: every per-tensor scale is 1 (current and delayed scaling cast unscaled)");
  r.note(
      // One line at 80 columns each, so the screen before Q14 fits 80x40 (the formats' limits follow below).
      fmt::format("{0}-{0}-{0}-{0} tanh MLP (labs 02/07's data); x, h, W in E4M3, dL/dy in E5M2", kWidth));
  r.note(path_note(m.ctx));
  r.section("Step 0: nonzero values each FP8 cast loses (flushed to 0 or beyond max)");
  auto& t = r.table("", {"tensor", "amax", "no scale", pow2(std::exp2(m.best_exp)) + " for all",
                         "loss scale " + pow2(kLossScale), "per-tensor"});
  const auto [lo, lo_name, hi, hi_name] = amax_extremes(m);
  for (const auto& s : m.tensors) {
    t.row({s.name, lab::sci(s.amax), lab::percent(s.flushed_none + s.beyond_none),
           lab::percent(lost_share(s.t, std::exp2(m.best_exp), s.grad)), lab::percent(s.lost_loss_scale),
           lab::percent(s.lost_own)});
  }
  r.note(fmt::format("amax from {} ({}) to {} ({}): {:.1f} powers of two; E4M3 holds {} to {}, E5M2 {} to {}",
                     pow2(lo), lo_name, pow2(hi), hi_name, std::log2(hi / lo), pow2(m.e4m3.min_subnormal),
                     pow2(m.e4m3.max), pow2(m.e5m2.min_subnormal), pow2(m.e5m2.max)));

  r.section(
      fmt::format("Training, {} Adam steps (lr {}): final MSE in float64, x bf16 autocast's", m.steps, kLr));
  const double b = m.bf16;
  r.observe("final_loss_bf16", "bf16 autocast (the yardstick)", b, "", lab::sci(b));
  r.observe("loss_ratio_fp32", "fp32", m.fp32 / b, "x", times(m.fp32 / b));
  r.observe("loss_ratio_fp8_unscaled", "FP8, no scale", m.none.final_loss / b, "x",
            times(m.none.final_loss / b));
  r.observe("loss_ratio_fp8_loss_scale",
            fmt::format("FP8, one loss scale (GradScaler {} -> {})", pow2(kLossScale),
                        pow2(m.loss_scale.final_scale)),
            m.loss_scale.final_loss / b, "x", times(m.loss_scale.final_loss / b));
  r.observe("loss_ratio_fp8_current", "FP8, current scaling (this step's amax)", m.current.final_loss / b,
            "x", times(m.current.final_loss / b));
  r.observe("loss_ratio_fp8_delayed", fmt::format("FP8, delayed scaling (amax history {})", kHistory),
            m.delayed.final_loss / b, "x", times(m.delayed.final_loss / b));
  r.observe("loss_ratio_no_exp_limit", "FP8's mantissa rounding, no exponent limits", m.no_limit / b, "x",
            times(m.no_limit / b));
}

// After the answer: what one scale does and cannot do.
void report_one_scale(const Result& m, lab::Report& r) {
  r.detail_section("One scale for the whole model");
  const auto [lo, lo_name, hi, hi_name] = amax_extremes(m);
  r.observe("amax_spread_binades",
            fmt::format("powers of two from the amax of {} to that of {}", lo_name, hi_name),
            std::log2(hi / lo), "",
            fmt::format("{:.1f} (one factor can fit both into {:.1f})", std::log2(hi / lo), room(m)));
  const auto lo_t =
      std::find_if(m.tensors.begin(), m.tensors.end(), [&](const auto& s) { return s.name == lo_name; });
  const auto hi_t =
      std::find_if(m.tensors.begin(), m.tensors.end(), [&](const auto& s) { return s.name == hi_name; });
  r.observe("one_scale_room_binades",
            fmt::format("powers of two one factor can fit {} and {} into", hi_name, lo_name), room(m), "",
            fmt::format("{:.1f} powers of two, from {}'s {} max to {}'s {} smallest subnormal", room(m),
                        hi_name, hi_t->grad ? "E5M2" : "E4M3", lo_name, lo_t->grad ? "E5M2" : "E4M3"));
  double grad_flushed = 0, grad_lost_own = 0, beyond = 0, grad_lost_loss_scale = 0;
  for (const auto& s : m.tensors) {
    beyond = std::max(beyond, s.beyond_none);
    if (!s.grad) continue;
    grad_flushed = std::max(grad_flushed, s.flushed_none);
    grad_lost_own = std::max(grad_lost_own, s.lost_own);
    grad_lost_loss_scale = std::max(grad_lost_loss_scale, s.lost_loss_scale);
  }
  r.observe("grad_flushed_unscaled", "dL/dy flushed to zero without a scale (worst tensor)",
            100 * grad_flushed, "%", lab::percent(grad_flushed));
  r.observe("grad_flushed_scaled", "dL/dy lost with a scale per tensor (worst tensor)", 100 * grad_lost_own,
            "%", lab::percent(grad_lost_own));
  r.observe("overflow_unscaled", "values beyond the format's max without a scale (worst tensor)",
            100 * beyond, "%", lab::percent(beyond));
  r.observe("one_scale_lost",
            fmt::format("the best single scale for all nine, 2^{}: {} lost", m.best_exp, m.best_worst),
            100 * m.best_lost, "%", lab::percent(m.best_lost));
  r.observe("loss_scale_grad_lost",
            fmt::format("one loss scale {}: dL/dy lost (worst tensor)", pow2(kLossScale)),
            100 * grad_lost_loss_scale, "%", lab::percent(grad_lost_loss_scale));
  r.observe("loss_scale_w3_lost", "... W3 lost at step 0 (cast unscaled)",
            100 * m.tensors[kW3].lost_loss_scale, "%", lab::percent(m.tensors[kW3].lost_loss_scale));
  r.observe("loss_scale_w3_lost_end", "... W3 lost after training", 100 * m.loss_scale.w3_lost_at_end, "%",
            lab::percent(m.loss_scale.w3_lost_at_end));
  r.note(
      "a loss scale multiplies the loss, so it moves every gradient by one factor and nothing else: "
      "the layer inputs and weights reach their E4M3 casts unscaled");
}

// After the answer: current against delayed scaling, and why Transformer Engine has both.
void report_delayed(const Result& m, lab::Report& r) {
  r.detail_section("Current against delayed scaling");
  const Clipped c = worst_clipped(m.delayed), cm = worst_clipped(m.delayed_margin);
  const double b = m.bf16;
  r.observe(
      "delayed_clipped",
      fmt::format("delayed: the most one cast clipped at the format's max ({}, step {})", c.tensor, c.step),
      100 * c.share, "%", lab::percent(c.share));
  r.observe("loss_ratio_fp8_delayed_margin",
            fmt::format("delayed with a margin of {:g} (scales / 2^{:g}; TE's default is 0), x bf16's loss",
                        kMargin, kMargin),
            m.delayed_margin.final_loss / b, "x", times(m.delayed_margin.final_loss / b));
  r.observe("delayed_margin_clipped", "... the most one of its casts clipped", 100 * cm.share, "%",
            lab::percent(cm.share));
  const std::string clipped =
      c.share > 0 ? fmt::format("here {} of {} at step {}", lab::percent(c.share), c.tensor, c.step)
                  : "here nothing was";
  r.note(fmt::format(
      "delayed scaling casts with past amaxes, so a tensor that grows faster than its history is clipped at "
      "the format's max: {}. This seeded toy run ended at {} bf16's loss with delayed scaling, "
      "{} with current scaling and {} with delayed scaling and a margin of {:g} (at most {} clipped): which "
      "recipe ends lower is this run's outcome, not a property of the recipes",
      clipped, times(m.delayed.final_loss / b), times(m.current.final_loss / b),
      times(m.delayed_margin.final_loss / b), kMargin, lab::percent(cm.share)));
  r.note(
      fmt::format("the history here is {} steps long (TE's default is 1024) so that its scale follows the "
                  "tensors over a {}-step run; step 0, with no history, uses its own amax",
                  kHistory, m.steps));
  // Published practice, beside this toy run's outcome (sources named in the note).
  r.note(
      "in practice torchao removed delayed scaling in 2025 (pytorch/ao issue 1680, pull request 1753): its "
      "users preferred the accuracy of current (dynamic) scaling; Transformer Engine keeps DelayedScaling "
      "and adds Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling and NVFP4BlockScaling "
      "(transformer_engine/common/recipe)");
}

// After the answer: the formats from their bit patterns, and the emulation against at::_scaled_mm.
void report_formats(const Result& m, lab::Report& r) {
  r.detail_section("The FP8 formats, from their bit patterns");
  auto& t = r.table("", {"format", "max", "min normal", "min subnormal", "spacing at 1"});
  for (const auto& [name, f] : {std::pair{"E4M3 (e4m3fn)", m.e4m3}, std::pair{"E5M2", m.e5m2}})
    t.row({name, fmt::format("{:g}", f.max), lab::sci(f.min_normal),
           lab::sci(f.min_subnormal) + " = " + pow2(f.min_subnormal), fmt::format("{:g}", f.spacing_at_1)});
  r.note("decoded from the bit patterns 0x7E, 0x08, 0x01 (E4M3) and 0x7B, 0x04, 0x01 (E5M2)");
  r.observe("e4m3_max", "E4M3 largest finite value", m.e4m3.max);
  r.observe("e5m2_max", "E5M2 largest finite value", m.e5m2.max, "", fmt::format("{:g}", m.e5m2.max));
  r.observe("e4m3_min_subnormal", "E4M3 smallest subnormal", m.e4m3.min_subnormal, "",
            pow2(m.e4m3.min_subnormal));
  r.observe("e5m2_min_subnormal", "E5M2 smallest subnormal", m.e5m2.min_subnormal, "",
            pow2(m.e5m2.min_subnormal));
  r.observe("limits_agree", "std::numeric_limits gives the same max and smallest subnormal (1 = yes)",
            m.limits_agree);
  r.observe("e4m3_cast_past_max", fmt::format("E4M3: {:g} cast unscaled", kPastE4M3), m.e4m3_past, "",
            fmt::format("{:g} (inf gave {:g}: e4m3fn has no inf and saturates)", m.e4m3_past, m.e4m3_inf));
  r.observe("e5m2_cast_past_max", fmt::format("E5M2: {:g} cast unscaled", kPastE5M2), m.e5m2_past, "",
            fmt::format("{:g} (overflows, as fp16 does)", m.e5m2_past));
  r.observe("e4m3_span_binades", "E4M3: powers of two from its smallest subnormal to its max", m.e4m3.span(),
            "", fmt::format("{:.1f}", m.e4m3.span()));
  r.observe("e5m2_span_binades", "E5M2: powers of two from its smallest subnormal to its max", m.e5m2.span(),
            "", fmt::format("{:.1f}", m.e5m2.span()));

  // A demonstration, not a check: without AMX, at::_scaled_mm's CPU fallback (aten/src/ATen/native/
  // Blas.cpp) dequantizes with the inverse scales and calls at::matmul, the emulation's own arithmetic, so
  // the two cannot differ there; with AMX oneDNN computes it and may round differently within the bound.
  r.detail_section("The emulated FP8 matmul beside at::_scaled_mm on the CPU");
  r.observe("emulation_bitwise", "step-0 products bitwise equal to at::_scaled_mm's",
            static_cast<double>(m.emu.bitwise), "", lab::count_of(m.emu.bitwise, m.emu.products));
  r.observe("emulation_error_vs_bound", "largest difference over the fp32 accumulation bound",
            m.emu.worst_vs_bound, "", fmt::format("{:.3g}", m.emu.worst_vs_bound));
  const bool amx = lab::cpu_flags().count("amx_int8") > 0;
  r.note(
      amx ? "this CPU lists amx_int8: at::_scaled_mm runs oneDNN here (ATen's Blas.cpp), whose rounding may "
            "differ within the bound"
          : "this CPU lists no amx_int8: at::_scaled_mm runs ATen's fallback here (Blas.cpp), which "
            "dequantizes and calls at::matmul as the emulation does, so the two agree by construction; with "
            "AMX it runs oneDNN instead");
}

void check_quantize(const Result& m, lab::Report& r) {
  // Catches each rule of quantize() on its own, against the lab's float64 step on crafted tensors (the
  // evidence names the first case and call that differ, and for delayed scaling the misreading of the
  // history its scales follow; the values say the same as numbers): the other format's max, no margin (or
  // one in current scaling only), t.max() for the amax, no floor under an all-zero amax, no saturation, a
  // history never updated, of the wrong length or joined by this call's amax, a delayed history of t.max()
  // (through delayed scaling's negative amax), and a share clipped counted from the cast's infs, which E4M3
  // never makes (through E4M3's spike beyond 448).
  nlohmann::json values = {{"first_wrong_case", m.quantize.first_wrong},
                           {"unsaturated_cases", m.quantize.unsaturated_cases},
                           {"share_wrong_cases", m.quantize.share_wrong_cases}};
  for (const auto& reading : judge::kReadings)
    values["reads_" + reading] = std::find(m.quantize.readings.begin(), m.quantize.readings.end(), reading) !=
                                 m.quantize.readings.end();
  std::string wrong;
  for (const auto& [name, why] : m.quantize.wrong)
    wrong += fmt::format("{}{} ({})", wrong.empty() ? "" : "; ", name, why);
  r.check("quantize-matches-float64",
          "on crafted tensors quantize() gives the lab's float64 step and reports the share it clipped: both "
          "formats' maxima, a margin, a negative amax, all zeros, and a delayed history's spike (past each "
          "format's max), length and sign",
          m.quantize.wrong.empty(),
          m.quantize.wrong.empty()
              ? fmt::format("all {} cases within one FP8 step, inverse scales within {:g}", m.quantize.cases,
                            judge::kScaleTol)
              : fmt::format("wrong: {} of {} cases: {}", m.quantize.wrong.size(), m.quantize.cases, wrong),
          values);
}

void report_checks(const Result& m, lab::Report& r) {
  double grad_flushed = 0, worst_own = 0;
  for (const auto& s : m.tensors) {
    worst_own = std::max(worst_own, s.lost_own);
    if (s.grad) grad_flushed = std::max(grad_flushed, s.flushed_none);
  }
  const double b = m.bf16, none = m.none.final_loss / b, ls = m.loss_scale.final_loss / b;
  const double cur = m.current.final_loss / m.no_limit, del = m.delayed.final_loss / m.no_limit;
  const double w3 = m.tensors[kW3].lost_loss_scale;
  // Catches a quantize() whose scale does not map the tensor's amax onto the format's max, such as an
  // inverted scale (amax / max) or --flip's scale of 1.
  // The losses are counted on the FP8 values quantize() returns, against the fp32 tensor: zeros and
  // non-finite values where the tensor had a nonzero value.
  r.check(
      "per-tensor-keeps-values",
      "unscaled, FP8 flushes most of the smallest gradients to zero; a scale per tensor keeps nearly all of "
      "every tensor",
      grad_flushed >= kMostFlushed && worst_own <= kFewLost,
      fmt::format("worst dL/dy: {} flushed unscaled (need >= {}); per tensor: at most {} of any tensor lost "
                  "(need <= {})",
                  lab::percent(grad_flushed), lab::percent(kMostFlushed, 0), lab::percent(worst_own),
                  lab::percent(kFewLost, 0)),
      {{"grad_flushed", grad_flushed}, {"worst_lost_per_tensor", worst_own}});
  // The best single scale is searched over 2^-20 .. 2^50 on the step-0 tensors themselves, so this fails
  // when their amaxes fit into one factor's room (a problem whose gradients are not small). W3 under one
  // loss scale is shown, not checked: a loss scale never reaches W3, so W3 then loses exactly what its
  // unscaled cast loses, by construction.
  r.check("one-scale-loses-values", "no single scale holds all nine tensors", m.best_lost >= kOneScaleLost,
          fmt::format("best scale for all, 2^{}: {} of {} lost (need >= {}); W3 under loss scale {} loses {} "
                      "(its unscaled cast)",
                      m.best_exp, lab::percent(m.best_lost), m.best_worst, lab::percent(kOneScaleLost, 0),
                      pow2(kLossScale), lab::percent(w3)));
  r.check("unscaled-fails", "FP8 training without a scale fails", none >= kFailsFactor,
          fmt::format("{} bf16's loss (need >= {}x)", times(none), kFailsFactor));
  r.check("loss-scale-fails", "FP8 training with one loss scale, fp16's recipe, ends far above bf16",
          ls >= kFailsFactor,
          fmt::format("{} bf16's loss (need >= {}x); W3 still loses {} of its values at the end", times(ls),
                      kFailsFactor, lab::percent(m.loss_scale.w3_lost_at_end)));
  r.check(
      "per-tensor-trains",
      fmt::format("with a scale per tensor, current and delayed scaling end within {}x the loss of the same "
                  "mantissa rounding without exponent limits",
                  kTrainsWithin),
      cur <= kTrainsWithin && del <= kTrainsWithin,
      fmt::format("current {}, delayed {} the loss of FP8's mantissa rounding without exponent limits (need "
                  "<= {}x), which itself ends at {} bf16's",
                  times(cur), times(del), kTrainsWithin, times(m.no_limit / b)));
  check_quantize(m, r);
}

// The conclusions, shown with the checks.
void report_takeaways(const Result& m, lab::Report& r) {
  const auto [lo, lo_name, hi, hi_name] = amax_extremes(m);
  r.takeaway(fmt::format(
      "FP8's range is too narrow for one scale: one factor moves every tensor by the same power of two, and "
      "{} and {} sit {:.1f} powers of two apart, more than the {:.1f} between the largest value of {}'s "
      "format and the smallest subnormal of {}'s: the best single scale, 2^{}, still lost {} of {}. A loss "
      "scale moves only the gradients. Activations, weights and gradients each need their own scale",
      hi_name, lo_name, std::log2(hi / lo), room(m), hi_name, lo_name, m.best_exp, lab::percent(m.best_lost),
      m.best_worst));
  r.takeaway(
      "Transformer Engine's DelayedScaling takes the scale from an amax history so that a cast reads its "
      "tensor once instead of twice (once for the amax, once to cast): TE documents it for the memory "
      "traffic it saves (TE docs, \"FP8 Delayed Scaling\"; Float8CurrentScaling is TE's current-scaling "
      "recipe). It clips a tensor that grows faster than its history. Which recipe ended lower here is one "
      "seeded toy run's outcome, not a property of the recipes");
}

void report(const Result& m, lab::Report& r) {
  report_measured(m, r);
  report_one_scale(m, r);
  report_delayed(m, r);
  report_formats(m, r);
  report_checks(m, r);
  report_takeaways(m, r);
}

}  // namespace

AMP_LAB(measure, report);
