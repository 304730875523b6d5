// Lab 14: FP8 training needs a scale per tensor. Backs quiz question 14.
//
// The small-gradient problem of labs 02 and 07 (src/lab/underflow.h), widened to 16 hidden units so the
// matmuls fit FP8 kernels' multiple-of-16 shapes. The lab
//   1. decodes E4M3 (weights, activations) and E5M2 (gradients) from bit patterns and compares them with
//      std::numeric_limits,
//   2. casts the MLP's step-0 activations, weights and gradients to FP8 without a scale and measures the
//      share that overflows or flushes to zero, then with a scale per tensor (fp8 max / the tensor's amax),
//   3. trains with every Linear in FP8 (E4M3 forward, E5M2 gradients; at::_scaled_mm for the matmuls) with
//      no scale, current scaling (this tensor's amax) and delayed scaling (the max over an amax history of
//      the last steps, as production FP8 recipes do), against fp32 and bf16 autocast.
// On the CPU _scaled_mm is a reference kernel: the lab measures accuracy only, never speed.
//
// Run alone: build/bin/lab14_fp8_scaling [--device cpu|cuda] [--quick] [--flip]
// --flip drops the scales (every FP8 cast uses scale 1), so delayed scaling trains like no scaling.
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "lab/registry.h"
#include "lab/underflow.h"

namespace {

namespace uf = lab::underflow;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kTrainSteps = 300;      // Adam steps per run (as labs 02 and 07)
constexpr int64_t kTrainStepsQuick = 80;  // ... in quick mode
constexpr double kLearningRate = 3e-3;    // Adam, the same for every run
constexpr int64_t kHistory = 16;          // delayed scaling: amax history length
constexpr double kE4M3Max = 448.0, kE5M2Max = 57344.0;
// Check thresholds.
constexpr double kFailsFactor = 1.5;      // unscaled FP8 ends at least 1.5x bf16's loss
constexpr double kWithinBf16 = 0.25;      // delayed-scaling FP8 ends within 25% of bf16's loss

enum class Scaling { None, Current, Delayed };

// One tensor role of one layer (its input, weight or output gradient): the scaling state.
struct Scaler {
  Scaling mode = Scaling::None;
  double fp8_max = kE4M3Max;
  torch::Tensor history;  // the last kHistory amaxes, newest first
  // Casts t * scale to `dtype`, saturating as FP8 recipes do; returns (fp8 tensor, 1/scale as 0-dim fp32).
  std::pair<torch::Tensor, torch::Tensor> quantize(const torch::Tensor& t, torch::ScalarType dtype) {
    const torch::Tensor amax = t.detach().abs().max().to(torch::kFloat).clamp_min(1e-30);
    torch::Tensor scale = torch::ones({}, amax.options());
    if (mode == Scaling::Current) scale = fp8_max / amax;
    if (mode == Scaling::Delayed) {
      if (!history.defined()) history = torch::zeros({kHistory}, amax.options());
      const torch::Tensor past = history.max();
      scale = fp8_max / torch::where(past > 0, past, amax);  // the first step has no history: use this amax
      history = torch::roll(history, 1);
      history[0] = amax;
    }
    return {(t * scale).clamp(-fp8_max, fp8_max).to(dtype), scale.reciprocal()};
  }
};

struct Layer { Scaler x{.fp8_max = kE4M3Max}, w{.fp8_max = kE4M3Max}, g{.fp8_max = kE5M2Max}; };

bool g_use_scaled_mm = true;  // false only if this LibTorch's _scaled_mm refuses the CPU (probed in run())

// a (row-major) @ b, both FP8, each with its 1/scale; fp32 out.
torch::Tensor mm8(const torch::Tensor& a, const torch::Tensor& inv_a, const torch::Tensor& b, const torch::Tensor& inv_b) {
  if (!g_use_scaled_mm) return (a.to(torch::kFloat) * inv_a).matmul(b.to(torch::kFloat) * inv_b);
  return at::_scaled_mm(a.contiguous(), b.t().contiguous().t(), inv_a, inv_b, {}, {}, torch::kFloat);  // b column-major
}

// y = x w^T + b with both matmuls of forward and backward in FP8.
struct Fp8Linear : torch::autograd::Function<Fp8Linear> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor w, torch::Tensor b, Layer* layer) {
    auto [x8, inv_x] = layer->x.quantize(x, torch::kFloat8_e4m3fn);
    auto [w8, inv_w] = layer->w.quantize(w, torch::kFloat8_e4m3fn);
    ctx->save_for_backward({x8, inv_x, w8, inv_w});
    ctx->saved_data["layer"] = reinterpret_cast<int64_t>(layer);
    return mm8(x8, inv_x, w8.t(), inv_w) + b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* layer = reinterpret_cast<Layer*>(ctx->saved_data["layer"].toInt());
    const auto s = ctx->get_saved_variables();
    auto [g8, inv_g] = layer->g.quantize(grads[0], torch::kFloat8_e5m2);
    return {mm8(g8, inv_g, s[2], s[3]), mm8(g8.t(), inv_g, s[0], s[1]), grads[0].sum(/*dim=*/0), torch::Tensor()};
  }
};

// The problem's MLP (underflow.cpp's forward) with FP8 Linears; MSE in fp32.
torch::Tensor fp8_loss(const uf::Params& p, const uf::Problem& problem, std::vector<Layer>& layers) {
  torch::Tensor h = torch::tanh(Fp8Linear::apply(problem.x, p[0], p[1], &layers[0]));
  h = torch::tanh(Fp8Linear::apply(h, p[2], p[3], &layers[1]));
  return torch::mse_loss(Fp8Linear::apply(h, p[4], p[5], &layers[2]), problem.y);
}

double train_fp8(const uf::Problem& problem, Scaling mode, int64_t steps) {
  std::vector<Layer> layers(3);
  for (auto& l : layers) l.x.mode = l.w.mode = l.g.mode = mode;
  uf::Params p = uf::copy_params(problem.init);
  torch::optim::Adam opt(p, torch::optim::AdamOptions(kLearningRate));
  for (int64_t i = 0; i < steps; ++i) {
    opt.zero_grad();
    fp8_loss(p, problem, layers).backward();
    opt.step();
  }
  return uf::eval_loss(p, problem);
}

struct CastStats { double overflow = 0, flushed = 0; };
// Of t's nonzero values, the shares beyond the format's max and cast to zero, after multiplying by scale.
CastStats cast_stats(const torch::Tensor& t, double fp8_max, torch::ScalarType dtype, double scale) {
  const torch::Tensor v = t.detach().to(torch::kDouble).flatten() * scale;
  const torch::Tensor nz = v != 0;
  const double n = nz.sum().item<double>();
  return {(v.abs() > fp8_max).sum().item<double>() / n, (nz & (v.to(dtype) == 0)).sum().item<double>() / n};
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("fp8-scaling", "FP8 training needs a scale per tensor");
  r.note(fmt::format("E4M3 forward, E5M2 gradients, fp32 master weights and Adam; float64 evaluation{}",
                     ctx.flip ? "; FLIP: every FP8 scale is 1" : ""));
  if (ctx.cuda()) {
    const int cc = amp::cuda_compute_capability();
    r.note(fmt::format("CUDA: {} (compute capability {}.{}): {} FP8 tensor cores (8.9 or newer)", amp::cuda_device_name(),
                       cc / 10, cc % 10, cc >= 89 ? "has" : "has no"));
  } else {
    r.note("CPU: at::_scaled_mm here is a reference kernel (FP8 values widened to fp32): accuracy only, no speed claimed");
  }
  try {  // 2.13's CPU build has _scaled_mm; fall back (and say so) only where a build lacks it
    const torch::Tensor one = torch::ones({}, torch::TensorOptions().device(ctx.device));
    const torch::Tensor a = torch::ones({16, 16}, one.options()).to(torch::kFloat8_e4m3fn);
    at::_scaled_mm(a, a.t(), one, one, {}, {}, torch::kFloat);
    g_use_scaled_mm = true;
  } catch (const std::exception&) {
    g_use_scaled_mm = false;
    r.note("at::_scaled_mm is unavailable on this device: the FP8 matmuls run as dequantized fp32 matmuls");
  }

  // 1. The formats from their bit patterns.
  using E4 = c10::Float8_e4m3fn;
  using E5 = c10::Float8_e5m2;
  auto e4 = [](uint8_t b) { return static_cast<float>(E4(b, E4::from_bits())); };
  auto e5 = [](uint8_t b) { return static_cast<float>(E5(b, E5::from_bits())); };
  r.table("FP8 formats from bit patterns (numeric_limits agree: see the check)", {"format", "max", "min normal", "min subnormal", "epsilon"})
      .row({"E4M3 (e4m3fn)", fmt::format("{:g} (0x7E)", e4(0x7E)), fmt::format("{} (0x08)", lab::sci(e4(0x08))),
            fmt::format("{} (0x01)", lab::sci(e4(0x01))), fmt::format("{:g} (0x38->0x39)", e4(0x39) - e4(0x38))})
      .row({"E5M2", fmt::format("{:g} (0x7B)", e5(0x7B)), fmt::format("{} (0x04)", lab::sci(e5(0x04))),
            fmt::format("{} (0x01)", lab::sci(e5(0x01))), fmt::format("{:g} (0x3C->0x3D)", e5(0x3D) - e5(0x3C))});
  const bool limits_agree = e4(0x7E) == static_cast<float>(std::numeric_limits<E4>::max()) &&
                            e4(0x01) == static_cast<float>(std::numeric_limits<E4>::denorm_min()) &&
                            e5(0x7B) == static_cast<float>(std::numeric_limits<E5>::max()) &&
                            e5(0x01) == static_cast<float>(std::numeric_limits<E5>::denorm_min());

  // 2. Step-0 tensors of the MLP, cast unscaled and with a per-tensor scale.
  const uf::Problem problem = uf::make_problem({.hidden = 16}, ctx.device);
  uf::Params p = uf::copy_params(problem.init);
  std::vector<torch::Tensor> acts;
  uf::loss_of(p, problem, &acts).backward();
  struct Row { std::string name; torch::Tensor t; bool grad; };
  std::vector<Row> rows = {{"input x", problem.x, false}, {"weight w1", p[0], false}, {"weight w3 (output)", p[4], false},
                           {"grad of layer-3 output", acts[2].grad(), true}, {"grad of layer-1 output", acts[0].grad(), true},
                           {"grad of w3", p[4].grad(), true}};
  auto& t = r.table("Step-0 tensors cast to FP8: share of nonzero values lost",
                    {"tensor", "format", "amax", "overflow, no scale", "flushed to 0, no scale", "flushed, per-tensor scale"});
  double grad_flushed = 0, grad_flushed_scaled = 0, overflow_max = 0;
  for (const auto& row : rows) {
    const double fmax = row.grad ? kE5M2Max : kE4M3Max;
    const auto dtype = row.grad ? torch::kFloat8_e5m2 : torch::kFloat8_e4m3fn;
    const double amax = row.t.abs().max().item<double>();
    const CastStats none = cast_stats(row.t, fmax, dtype, 1.0), scaled = cast_stats(row.t, fmax, dtype, fmax / amax);
    t.row({row.name, row.grad ? "E5M2" : "E4M3", lab::sci(amax), lab::percent(none.overflow), lab::percent(none.flushed),
           lab::percent(scaled.flushed)});
    if (row.grad) grad_flushed = std::max(grad_flushed, none.flushed), grad_flushed_scaled = std::max(grad_flushed_scaled, scaled.flushed);
    overflow_max = std::max(overflow_max, none.overflow);
  }
  r.observe("grad_flushed_unscaled", "gradients flushed to zero without a scale (worst tensor)", 100 * grad_flushed, "%", lab::percent(grad_flushed));
  r.observe("grad_flushed_scaled", "gradients flushed with a per-tensor scale (worst tensor)", 100 * grad_flushed_scaled, "%", lab::percent(grad_flushed_scaled));
  r.observe("overflow_unscaled", "values beyond the format's max without a scale (worst tensor)", 100 * overflow_max, "%", lab::percent(overflow_max));

  // 3. Training.
  const int64_t steps = ctx.size(kTrainSteps, kTrainSteps, kTrainStepsQuick);
  r.section(fmt::format("Training, {} Adam steps (lr {}): final MSE in float64, x bf16 autocast's", steps, kLearningRate));
  const double fp32 = uf::train(problem, {.autocast = std::nullopt, .scaler = std::nullopt, .steps = steps, .lr = kLearningRate}).final_loss;
  const double bf16 = uf::train(problem, {.autocast = torch::kBFloat16, .scaler = std::nullopt, .steps = steps, .lr = kLearningRate}).final_loss;
  const double none = train_fp8(problem, Scaling::None, steps);
  const double current = train_fp8(problem, ctx.flip ? Scaling::None : Scaling::Current, steps);
  const double delayed = train_fp8(problem, ctx.flip ? Scaling::None : Scaling::Delayed, steps);
  auto text = [&](double loss) { return fmt::format("{:.2f}x  ({})", loss / bf16, lab::sci(loss)); };
  r.observe("final_loss_bf16", "bf16 autocast (the yardstick)", bf16, "", lab::sci(bf16));
  r.observe("loss_ratio_fp32", "fp32", fp32 / bf16, "x", text(fp32));
  r.observe("loss_ratio_fp8_unscaled", "FP8, no scale", none / bf16, "x", text(none));
  r.observe("loss_ratio_fp8_current", "FP8, current scaling", current / bf16, "x", text(current));
  r.observe("loss_ratio_fp8_delayed", fmt::format("FP8, delayed scaling (amax history {})", kHistory), delayed / bf16, "x", text(delayed));

  r.check("the bit patterns decode to the limits std::numeric_limits reports", limits_agree,
          fmt::format("E4M3 max {:g}, E5M2 max {:g}", e4(0x7E), e5(0x7B)));
  r.check("without a scale FP8 flushes gradients that a per-tensor scale keeps", grad_flushed >= 0.5 && grad_flushed_scaled <= 0.05,
          fmt::format("worst gradient tensor: {} flushed unscaled (need >= 50%), {} scaled (need <= 5%)", lab::percent(grad_flushed),
                      lab::percent(grad_flushed_scaled)));
  r.check("FP8 training without scales fails", none / bf16 >= kFailsFactor,
          fmt::format("{:.2f}x bf16's loss (need >= {})", none / bf16, kFailsFactor));
  r.check("FP8 with delayed per-tensor scaling trains about as well as bf16", std::abs(delayed / bf16 - 1) <= kWithinBf16,
          fmt::format("{:.2f}x bf16's loss (need within {})", delayed / bf16, lab::percent(kWithinBf16, 0)));
  r.takeaway("FP8's range is too narrow for one loss scale: activations, weights and gradients each need their own scale, "
             "and delayed scaling takes it from the amax of recent steps");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
