// Lab 07: bf16 trains without a loss scale where fp16 needs one (quiz question 7). The AMP code is in
// amp.cpp.
//
// The same small-gradient problem as lab 02 (src/lab/underflow.h: small targets, an MSE averaged over
// 2048 outputs, an output layer that starts near zero), trained with fp32 master weights. The bf16 step is
// autocast alone: loss.backward(), opt.step(), no scaler. Next to it, fp16 through that same step (no
// scaling) and fp16 with an amp::GradScaler (scale, step, update). The lab
//   1. takes step 0's activation gradients (a float64 reference) and counts, unscaled, the share that
//      becomes zero in fp16 and in bf16: by a plain cast, and through an autocast backward pass (which
//      computes each gradient from 16-bit operands, so its share differs a little; lab 02 quotes that one),
//   2. trains four ways: fp32, bf16 without a scaler, fp16 without one, fp16 with a GradScaler,
//   3. shows the price: bf16 keeps 8 significant bits to fp16's 11, so it rounds about 2^3 = 8x coarser.
// The formats' limits come from std::numeric_limits. CPU and CUDA run the same code.
//
// Run:  build/bin/lab07_bf16_scaling [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the lab uses both 16-bit types)
// --flip: fp16 wherever the lab uses bf16. The "bf16" gradients then become zero as fp16's do, the "bf16"
//         run trains as fp16 without a scaler does, and it rounds as finely as fp16: checks
//         bf16-keeps-gradients, bf16-trains-without-scaler and bf16-rounds-coarser fail.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/underflow.h"

namespace {

using namespace lab07;
namespace uf = lab::underflow;

constexpr int64_t kTrainSteps = 300;        // Adam steps per training run (as lab 02)
constexpr int64_t kTrainStepsQuick = 80;    // ... in quick mode
constexpr double kLearningRate = 3e-3;      // Adam, the same for every run
constexpr int64_t kGrowthInterval = 50;     // fp16's GradScaler doubles after 50 clean steps (PyTorch: 2000)
constexpr double kNearZeroShare = 0.01;     // bf16 at scale 1 zeroes at most 1% of the nonzero gradients
constexpr double kSubstantialShare = 0.20;  // fp16 at scale 1 zeroes at least 20%
constexpr double kAboutAsWell = 0.10;  // bf16 without a scaler ends within 10% of fp16 + GradScaler's loss
constexpr double kWorseFactor = 1.5;   // fp16 without a scaler ends at least 1.5x fp16 + GradScaler's loss
constexpr double kCoarserMin = 4, kCoarserMax = 16;  // bf16's rounding error / fp16's: about 2^(11-8) = 8

// ---- measure -----------------------------------------------------------------------------------------

// What std::numeric_limits says about a format.
struct Limits {
  double min_subnormal, min_normal, epsilon;
  int significant_bits;  // digits: the stored mantissa bits plus the implicit leading 1
  int exponent_bits;     // max_exponent = 2^(bits - 1)
};

template <typename T>
Limits limits() {
  using L = std::numeric_limits<T>;
  return {static_cast<double>(static_cast<float>(L::denorm_min())),
          static_cast<double>(static_cast<float>(L::min())),
          static_cast<double>(static_cast<float>(L::epsilon())), L::digits,
          static_cast<int>(std::lround(std::log2(L::max_exponent))) + 1};
}

Limits limits_of(torch::ScalarType dtype) {
  return dtype == torch::kHalf ? limits<c10::Half>() : limits<c10::BFloat16>();
}

// Step 0's activation gradients through an autocast backward pass in `dtype`, unscaled, in float64.
torch::Tensor grads_in(const uf::Problem& p, torch::ScalarType dtype) {
  torch::nn::Sequential model = uf::copy_of(p.student);
  std::vector<torch::Tensor> outputs;
  torch::Tensor loss;
  {
    amp::Autocast autocast(p.x.device(), dtype);
    loss = torch::mse_loss(uf::forward_keeping(model, p.x, &outputs), p.y);
  }
  loss.backward();
  return uf::grads_of(outputs);
}

// Trains a copy of the student for `steps`; `step` is one of the steps above. Returns the final float64 MSE.
template <class Step>
double train(const uf::Problem& p, int64_t steps, Step step) {
  torch::nn::Sequential model = uf::copy_of(p.student);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(kLearningRate));
  for (int64_t s = 0; s < steps; ++s) step(model, opt);
  return uf::eval_loss(model, p);
}

// Mean relative rounding error of `values` cast to `dtype`, against their float64 originals.
double mean_rel_error(const torch::Tensor& values, torch::ScalarType dtype) {
  const torch::Tensor v = values.to(torch::kDouble);
  return ((v.to(dtype).to(torch::kDouble) - v).abs() / v.abs()).mean().item<double>();
}

struct Result {
  lab::Context ctx;
  torch::ScalarType wide = torch::kBFloat16;  // the wide-range type: bf16 (--flip: fp16)
  Limits fp16{}, bf16{};                      // bf16: the wide type's
  Limits fp32_limits{};
  int64_t values = 0;                                                 // activation gradients counted
  double median = 0;                                                  // median |gradient|, float64
  double cast_fp16 = 0, cast_bf16 = 0, pass_fp16 = 0, pass_bf16 = 0;  // shares zeroed
  int64_t steps = 0;
  double fp32 = 0, bf16_none = 0, fp16_none = 0, fp16_scaled = 0;  // final losses
  double fp16_last_scale = 0;
  double err_fp16 = 0, err_bf16 = 0;  // mean relative rounding error of the inputs
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .wide = ctx.flip ? torch::kHalf : torch::kBFloat16};
  m.fp16 = limits_of(torch::kHalf);
  m.bf16 = limits_of(m.wide);
  m.fp32_limits = limits<float>();
  const uf::Problem p = uf::make_problem({}, ctx.device);
  const torch::Tensor ref = uf::reference_grads(p);
  m.values = ref.numel();
  m.median = ref.abs().median().item<double>();
  m.cast_fp16 = uf::cast_zeroed_share(ref, torch::kHalf);
  m.cast_bf16 = uf::cast_zeroed_share(ref, m.wide);
  m.pass_fp16 = uf::zeroed_share(ref, grads_in(p, torch::kHalf));
  m.pass_bf16 = uf::zeroed_share(ref, grads_in(p, m.wide));

  m.steps = ctx.size(kTrainSteps, kTrainSteps, kTrainStepsQuick);
  using torch::nn::Sequential;
  using torch::optim::Optimizer;
  auto without_scaler = [&](torch::ScalarType dtype) {
    return [&, dtype](Sequential& s, Optimizer& o) { step_without_scaler(s, o, dtype, p.x, p.y); };
  };
  m.fp32 = train(p, m.steps, without_scaler(torch::kFloat));
  m.bf16_none = train(p, m.steps, without_scaler(m.wide));
  m.fp16_none = train(p, m.steps, without_scaler(torch::kHalf));
  amp::GradScaler scaler(ctx.device, {.growth_interval = kGrowthInterval});
  m.fp16_scaled = train(p, m.steps, [&](Sequential& s, Optimizer& o) {
    m.fp16_last_scale = scaler.get_scale();
    fp16_step_with_scaler(s, o, scaler, p.x, p.y);
  });

  m.err_fp16 = mean_rel_error(p.x, torch::kHalf);
  m.err_bf16 = mean_rel_error(p.x, m.wide);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

std::string pow2(double v) {
  return fmt::format("2^{:g}", std::log2(v));
}

void report_measured(const Result& m, lab::Report& r) {
  const std::string bf16 = m.ctx.flip ? "\"bf16\"" : "bf16";
  r.dtypes("bf16 and fp16", "bf16 and fp16 autocast, fp32 master weights, float64 reference");
  if (m.ctx.flip) r.note("FLIP: fp16 is used wherever the lab uses bf16 (\"bf16\")");
  auto row = [](const std::string& name, const Limits& l) {
    return std::vector<std::string>{name, lab::sci(l.min_subnormal), lab::sci(l.min_normal),
                                    lab::sci(l.epsilon), std::to_string(l.significant_bits)};
  };
  r.table("the formats (std::numeric_limits)",
          {"format", "smallest subnormal", "smallest normal", "epsilon", "significant bits"})
      .row(row("fp16", m.fp16))
      .row(row(bf16, m.bf16));

  r.section(fmt::format("Step-0 activation gradients ({} values), no loss scaling", m.values));
  r.observe("median_grad", "median |gradient| (float64)", m.median, "", lab::sci(m.median));
  r.observe("underflow_share_fp16", "fp16: zeroed by a plain cast", 100 * m.cast_fp16, "%");
  r.observe("underflow_share_fp16_backward", "fp16: zeroed in an autocast backward", 100 * m.pass_fp16, "%");
  r.observe("underflow_share_bf16", bf16 + ": zeroed by a plain cast", 100 * m.cast_bf16, "%");
  r.observe("underflow_share_bf16_backward", bf16 + ": zeroed in an autocast backward", 100 * m.pass_bf16,
            "%");

  r.section(fmt::format("Training, {} Adam steps (lr {}): final MSE in float64, x fp16 + GradScaler's",
                        m.steps, kLearningRate));
  r.note(fmt::format("GradScaler: init_scale {}, growth_interval {} (PyTorch's default: {})",
                     pow2(amp::GradScalerOptions{}.init_scale), kGrowthInterval,
                     amp::GradScalerOptions{}.growth_interval));
  const double base = m.fp16_scaled;  // the yardstick: fp16 done properly
  auto text = [&](double loss) { return fmt::format("{:.2f}x  ({})", loss / base, lab::sci(loss)); };
  r.observe("final_loss_fp16_scaler", "fp16 + GradScaler (the yardstick)", base, "",
            fmt::format("{}  (last scale {})", lab::sci(base), pow2(m.fp16_last_scale)));
  r.observe("loss_ratio_fp32", "fp32", m.fp32 / base, "x", text(m.fp32));
  r.observe("loss_ratio_bf16", bf16 + ", no scaler", m.bf16_none / base, "x", text(m.bf16_none));
  r.observe("loss_ratio_fp16_unscaled", "fp16, no scaler", m.fp16_none / base, "x", text(m.fp16_none));

  r.section("Rounding: the problem's inputs x, cast to each format");
  r.observe("rel_error_fp16", "fp16 mean relative error", m.err_fp16, "", lab::sci(m.err_fp16));
  r.observe("rel_error_bf16", bf16 + " mean relative error", m.err_bf16, "", lab::sci(m.err_bf16));
  const int fewer = m.fp16.significant_bits - m.bf16.significant_bits;
  r.observe("rel_error_ratio", bf16 + " error / fp16 error", m.err_bf16 / m.err_fp16, "x",
            fmt::format("{:.1f}x  (2^{} = {:g} for {} fewer bits)", m.err_bf16 / m.err_fp16, fewer,
                        std::ldexp(1.0, fewer), fewer));
}

void report_details(const Result& m, lab::Report& r) {
  const std::string bf16 = m.ctx.flip ? "\"bf16\"" : "bf16";
  r.detail_section("The formats' exponents and significands (std::numeric_limits)");
  r.observe("fp16_exponent_bits", "fp16 exponent bits", m.fp16.exponent_bits);
  r.observe("bf16_exponent_bits",
            fmt::format("{} exponent bits (fp32: {})", bf16, m.fp32_limits.exponent_bits),
            m.bf16.exponent_bits);
  r.observe("fp16_min_subnormal", "fp16 smallest subnormal", m.fp16.min_subnormal, "",
            lab::sci(m.fp16.min_subnormal));
  r.observe("bf16_min_subnormal", bf16 + " smallest subnormal", m.bf16.min_subnormal, "",
            lab::sci(m.bf16.min_subnormal));
  r.observe("fp16_significant_bits", "fp16 significant bits", m.fp16.significant_bits);
  r.observe("bf16_significant_bits", bf16 + " significant bits", m.bf16.significant_bits);
  r.observe("fp32_significant_bits", "fp32 significant bits", m.fp32_limits.significant_bits);
  r.note(
      "two counts of the same gradients: a plain cast rounds each float64 value once; an autocast backward "
      "pass computes each one from 16-bit operands (lab 02 quotes this count as 'fp16 zeroed, no scaling')");
}

void report_checks(const Result& m, lab::Report& r) {
  const std::string bf16 = m.ctx.flip ? "\"bf16\"" : "bf16";
  r.check(
      "bf16-keeps-gradients",
      fmt::format("{} at scale 1 zeroes (almost) no gradient, fp16 a substantial share, cast or in backward",
                  bf16),
      std::max(m.cast_bf16, m.pass_bf16) <= kNearZeroShare &&
          std::min(m.cast_fp16, m.pass_fp16) >= kSubstantialShare,
      fmt::format("{} {} cast, {} backward (need <= {}); fp16 {} cast, {} backward (need >= {})", bf16,
                  lab::percent(m.cast_bf16, 2), lab::percent(m.pass_bf16, 2), lab::percent(kNearZeroShare, 0),
                  lab::percent(m.cast_fp16, 2), lab::percent(m.pass_fp16, 2),
                  lab::percent(kSubstantialShare, 0)));
  const double ratio_bf16 = m.bf16_none / m.fp16_scaled, ratio_fp16 = m.fp16_none / m.fp16_scaled;
  r.check("bf16-trains-without-scaler",
          fmt::format("{} without a scaler trains about as well as fp16 with one", bf16),
          std::abs(ratio_bf16 - 1) <= kAboutAsWell,
          fmt::format("{:.3f}x fp16 + GradScaler's loss (need within {})", ratio_bf16,
                      lab::percent(kAboutAsWell, 0)));
  r.check("unscaled-fp16-worse", "fp16 without a scaler does worse", ratio_fp16 >= kWorseFactor,
          fmt::format("{:.2f}x fp16 + GradScaler's loss (need >= {})", ratio_fp16, kWorseFactor));
  const double coarser = m.err_bf16 / m.err_fp16;
  r.check("bf16-rounds-coarser",
          fmt::format("the price: {} rounds the inputs {} to {}x as coarsely as fp16", bf16, kCoarserMin,
                      kCoarserMax),
          coarser >= kCoarserMin && coarser <= kCoarserMax,
          fmt::format("mean relative error {} against fp16's {}: {:.2f}x", lab::sci(m.err_bf16),
                      lab::sci(m.err_fp16), coarser));
  r.takeaway(fmt::format(
      "a format's range is set by its exponent bits (fp32 {}, {} {}, fp16 {}), how finely it rounds by its "
      "significand bits",
      m.fp32_limits.exponent_bits, bf16, m.bf16.exponent_bits, m.fp16.exponent_bits));
}

void report(const Result& m, lab::Report& r) {
  report_measured(m, r);
  report_details(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
