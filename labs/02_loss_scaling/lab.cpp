// Lab 02: loss scaling, fp16 autocast with an amp::GradScaler (quiz question 2). The AMP code is in amp.cpp.
//
// A small regression whose gradients are genuinely small (small targets, an MSE averaged over 2048
// outputs, an output layer that starts near zero: src/lab/underflow.h builds it) trains with fp32 master
// weights under fp16 autocast, with the usual step: scaler.scale(loss).backward(), scaler.step(opt),
// scaler.update(). The lab
//   1. histograms step 0's activation gradients (a float64 reference) against fp16's limits and counts
//      the share that fp16 turns into zero: without scaling, with a fixed scale and with a GradScaler's
//      initial scale (after the SSD histogram of Micikevicius et al. 2018),
//   2. trains in fp32 (the lab's own step: the reference), in fp16 without scaling (train_step, the scaler
//      disabled) and in fp16 with it,
//   3. (after the answer) starts a GradScaler far too high: it overflows, skips exactly those steps,
//      backs off, and grows again after growth_interval clean steps.
// fp16 always (--dtype does not apply): loss scaling is an fp16 matter; lab 07 shows why bf16 needs none.
// CPU and CUDA run the same code; fp16 subnormals behave the same on both. The lab's own steps its checks
// hold train_step to (the fp32 step, the overflow verdict) are in judge.cpp.
//
// Run:  build/bin/lab02_loss_scaling [--device cpu|cuda] [--quick] [--seed N] [--json]
// --flip: the MSE is summed over the 2048 outputs, not averaged: every gradient is 2^11 times larger and
//         sits inside fp16's range, while Adam's steps stay the same. Nothing underflows, so scaling
//         rescues nothing: checks scaling-rescues-gradients and unscaled-fp16-worse fail.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "judge.h"
#include "lab/charts.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/skip_record.h"
#include "lab/underflow.h"

namespace {

namespace uf = lab::underflow;

constexpr int64_t kTrainSteps = 300;        // Adam steps per training run
constexpr int64_t kTrainStepsQuick = 80;    // ... in quick mode (the gap is smaller but clear)
constexpr double kLearningRate = 3e-3;      // Adam, the same for every run
constexpr double kFixedScale = 1024;        // 2^10, a hand-picked constant scale (the paper used 8 to 32768)
constexpr int64_t kGrowthInterval = 50;     // the GradScaler doubles after 50 clean steps (PyTorch: 2000)
constexpr double kDemoInitScale = 1 << 30;  // after the answer: a scale far too high, so it must overflow
constexpr int64_t kDemoGrowthInterval = 8;  // ... growing again after 8 clean steps
constexpr int64_t kDemoSteps = 48;          // demo length, one chart glyph per step
constexpr int64_t kDemoStepsQuick = 32;
constexpr double kSubstantialShare = 0.20;  // without scaling, at least 20% of the nonzero gradients become 0
constexpr double kNearZeroShare = 0.01;     // with a scale, at most 1% do
constexpr double kLossTolerance = 0.05;     // fp16 + GradScaler ends within 5% of fp32's final loss
constexpr double kWorseFactor = 1.5;        // fp16 without scaling ends at least 1.5x fp32's final loss

using namespace lab02;

// ---- measure -----------------------------------------------------------------------------------------

// Step 0's activation gradients under fp16 autocast, the loss multiplied by `scale` before backward (1: no
// scaling) and the gradients divided by it again, in float64.
torch::Tensor fp16_grads(const uf::Problem& p, torch::nn::MSELoss& mse, double scale) {
  torch::nn::Sequential model = uf::copy_of(p.student);
  std::vector<torch::Tensor> outputs;
  torch::Tensor loss;
  {
    amp::Autocast autocast(p.x.device(), torch::kHalf);
    loss = mse(uf::forward_keeping(model, p.x, &outputs), p.y);
  }
  (loss * scale).backward();
  return uf::grads_of(outputs, scale);
}

struct Run {
  std::vector<double> scale;     // per step, the loss scale it used (1: scaler disabled)
  std::vector<bool> stepped;     // per step, what train_step() returned
  std::vector<bool> overflowed;  // per step, the lab's own backward at that scale: an inf/NaN gradient
  std::vector<bool> moved;       // per step, checked apart from both: some weight changed (bitwise)
  double final_loss = 0;         // float64 MSE of the trained model
  int64_t skipped() const { return static_cast<int64_t>(std::count(stepped.begin(), stepped.end(), false)); }
};

// `steps` Adam steps from the problem's student: the lab's own fp32 step (judge.cpp) when `dtype` is
// kFloat, else the learner's train_step in fp16 with a scaler of `scaling` (disabled: no scaling).
Run train(const uf::Problem& p, torch::nn::MSELoss& mse, torch::ScalarType dtype,
          const amp::GradScalerOptions& scaling, int64_t steps) {
  torch::nn::Sequential model = uf::copy_of(p.student);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(kLearningRate));
  amp::GradScaler scaler(p.x.device(), scaling);
  Run run;
  for (int64_t s = 0; s < steps; ++s) {
    run.scale.push_back(scaler.get_scale());
    std::vector<torch::Tensor> before;
    for (const auto& w : model->parameters()) before.push_back(w.detach().clone());
    if (dtype == torch::kFloat) {
      judge::fp32_step(model, opt, mse, p);
      run.stepped.push_back(true);
      run.overflowed.push_back(false);
    } else {
      // Disabled, the scaler skips nothing and there is no scale to overflow: the check is not needed.
      run.overflowed.push_back(scaling.enabled && judge::overflows(model, p, mse, run.scale.back()));
      run.stepped.push_back(train_step(model, opt, scaler, mse, dtype, p.x, p.y));
    }
    bool moved = false;
    const auto after = model->parameters();
    for (size_t i = 0; i < before.size(); ++i) moved = moved || !torch::equal(before[i], after[i].detach());
    run.moved.push_back(moved);
  }
  run.final_loss = uf::eval_loss(model, p);
  return run;
}

struct Result {
  lab::Context ctx;
  uf::ProblemOptions problem;
  int64_t reduced_over = 0;  // the outputs the MSE averages (--flip: sums) over
  torch::Tensor reference;   // step 0's activation gradients, float64
  double zeroed_none = 0, zeroed_fixed = 0, zeroed_scaler = 0;
  double scaler_init = 0;  // a GradScaler's initial scale
  int64_t steps = 0;
  Run fp32, unscaled, scaled, demo;
  float half_sub_in_fp16 = 0, three_e8_in_fp16 = 0;  // 2^-25 and 3e-8 stored in fp16
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .steps = ctx.size(kTrainSteps, kTrainSteps, kTrainStepsQuick)};
  const uf::Problem p = uf::make_problem(m.problem, ctx.device);
  m.reduced_over = p.y.numel();
  torch::nn::MSELossOptions mean_or_sum;  // the MSE averaged over the outputs; --flip: summed
  if (ctx.flip) mean_or_sum.reduction(torch::kSum);
  torch::nn::MSELoss mse(mean_or_sum);
  m.reference = uf::reference_grads(p, mse);
  m.scaler_init = amp::GradScalerOptions{}.init_scale;
  m.zeroed_none = uf::zeroed_share(m.reference, fp16_grads(p, mse, 1.0));
  m.zeroed_fixed = uf::zeroed_share(m.reference, fp16_grads(p, mse, kFixedScale));
  m.zeroed_scaler = uf::zeroed_share(m.reference, fp16_grads(p, mse, m.scaler_init));

  const amp::GradScalerOptions off{.enabled = false}, on{.growth_interval = kGrowthInterval};
  m.fp32 = train(p, mse, torch::kFloat, off, m.steps);
  m.unscaled = train(p, mse, torch::kHalf, off, m.steps);
  m.scaled = train(p, mse, torch::kHalf, on, m.steps);
  m.demo = train(p, mse, torch::kHalf, {.init_scale = kDemoInitScale, .growth_interval = kDemoGrowthInterval},
                 ctx.size(kDemoSteps, kDemoSteps, kDemoStepsQuick));

  const auto in_fp16 = torch::tensor({0x1p-25f, 3e-8f}, torch::device(ctx.device)).to(torch::kHalf).cpu();
  m.half_sub_in_fp16 = in_fp16[0].item<float>();
  m.three_e8_in_fp16 = in_fp16[1].item<float>();
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

std::string pow2(double v) {
  return fmt::format("2^{:g}", std::log2(v));
}
std::string show(double v) {
  return v == 0 ? "0" : lab::sci(v);
}

void report_problem(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 master weights, fp16 autocast, float64 reference");
  if (m.ctx.flip) {
    r.note(fmt::format("FLIP: the MSE is summed over {} outputs, not averaged: gradients {}x larger",
                       m.reduced_over, m.reduced_over));
    return;
  }
  r.note(fmt::format("small by construction: targets of std {}, an MSE averaged over {}",
                     m.problem.target_std, m.reduced_over));
  r.note(fmt::format("outputs, an output layer at {} of the default init",
                     lab::percent(m.problem.output_init, 0)));
}

void report_gradients(const Result& m, lab::Report& r) {
  using L = std::numeric_limits<c10::Half>;
  r.section(fmt::format("Activation gradients at step 0 ({} values)", m.reference.numel()));
  r.chart(lab::log2_histogram("|gradient| in float64, by power of two", m.reference, /*lo=*/-34, /*hi=*/16,
                              /*step=*/5,
                              {{-25, "fp16: 0 at <= 2^-25"},
                               {-24, "min subnormal 2^-24"},
                               {-19, "subnormals: fewer bits"},
                               {-14, "fp16 min normal 2^-14"},
                               {15, fmt::format("fp16 max {:g}", static_cast<float>(L::max()))}},
                              /*bar_width=*/24));
  r.observe("underflow_share_unscaled", "fp16 zeroed, no scaling", 100 * m.zeroed_none, "%");
  r.observe("underflow_share_fixed", "fp16 zeroed, fixed scale " + pow2(kFixedScale), 100 * m.zeroed_fixed,
            "%");
  r.observe("underflow_share_scaler", "fp16 zeroed, GradScaler at " + pow2(m.scaler_init),
            100 * m.zeroed_scaler, "%");
}

void report_training(const Result& m, lab::Report& r) {
  r.section(
      fmt::format("Training, {} Adam steps (lr {}): final MSE in float64, x fp32's", m.steps, kLearningRate));
  r.note(fmt::format("GradScaler: init_scale {}, growth_interval {} (PyTorch's default: {})",
                     pow2(m.scaler_init), kGrowthInterval, amp::GradScalerOptions{}.growth_interval));
  const double ratio_none = m.unscaled.final_loss / m.fp32.final_loss;
  const double ratio_scaled = m.scaled.final_loss / m.fp32.final_loss;
  r.observe("final_loss_fp32", "fp32", m.fp32.final_loss, "", lab::sci(m.fp32.final_loss));
  r.observe("loss_ratio_unscaled", "fp16, no scaling", ratio_none, "x",
            fmt::format("{:.2f}x  ({})", ratio_none, lab::sci(m.unscaled.final_loss)));
  r.observe("loss_ratio_scaler", "fp16 + GradScaler", ratio_scaled, "x",
            fmt::format("{:.2f}x  ({}; {} skipped; last scale {})", ratio_scaled,
                        lab::sci(m.scaled.final_loss), m.scaled.skipped(), pow2(m.scaled.scale.back())));
}

int64_t regrowths(const Run& run) {
  int64_t n = 0;
  for (size_t i = 1; i < run.scale.size(); ++i) n += run.scale[i] > run.scale[i - 1];
  return n;
}

void report_details(const Result& m, lab::Report& r) {
  using L = std::numeric_limits<c10::Half>;
  r.detail_section("fp16's lower end (std::numeric_limits and casts)");
  r.observe("fp16_min_subnormal", "fp16 smallest subnormal", static_cast<float>(L::denorm_min()), "",
            lab::sci(static_cast<float>(L::denorm_min())));
  r.observe("fp16_min_normal", "fp16 smallest normal", static_cast<float>(L::min()), "",
            lab::sci(static_cast<float>(L::min())));
  r.observe("half_sub_as_fp16", fmt::format("2^-25 ({}) stored as fp16", lab::sci(0x1p-25)),
            m.half_sub_in_fp16, "", show(m.half_sub_in_fp16));
  r.observe("three_e8_as_fp16", "3e-08 stored as fp16", m.three_e8_in_fp16, "", show(m.three_e8_in_fp16));

  r.detail_section("The loss and the scales at step 0");
  r.observe("mse_outputs", m.ctx.flip ? "outputs the MSE sums over" : "outputs the MSE averages over",
            static_cast<double>(m.reduced_over));
  if (!m.ctx.flip) r.note(fmt::format("each gradient of that MSE is 2 x residual / {}", m.reduced_over));
  r.observe("fixed_scale", "the fixed loss scale", kFixedScale, "", pow2(kFixedScale));
  r.observe("init_scale", "GradScaler's default init_scale", m.scaler_init, "", pow2(m.scaler_init));

  const Run& d = m.demo;
  r.detail_section(fmt::format("Dynamic scaling: a GradScaler from {}, growth_interval {}, {} steps",
                               pow2(kDemoInitScale), kDemoGrowthInterval, d.scale.size()));
  r.chart(lab::sparkline("loss scale at each step (log2)", d.scale, /*log2_scale=*/true));
  const auto overflowed = std::count(d.overflowed.begin(), d.overflowed.end(), true);
  r.observe("skipped_steps", "steps skipped by scaler.step()", static_cast<double>(d.skipped()), "",
            fmt::format("{} of {}; {} had inf/NaN gradients; the scale grew {} times", d.skipped(),
                        d.scale.size(), overflowed, regrowths(d)));
}

void report_checks(const Result& m, lab::Report& r) {
  const double ratio_none = m.unscaled.final_loss / m.fp32.final_loss;
  const double ratio_scaled = m.scaled.final_loss / m.fp32.final_loss;
  r.check("scaling-rescues-gradients",
          "fp16 turns a substantial share of the gradients into zero without scaling, almost none with it",
          m.zeroed_none >= kSubstantialShare && m.zeroed_fixed <= kNearZeroShare &&
              m.zeroed_scaler <= kNearZeroShare,
          fmt::format("zeroed: {} unscaled (need >= {}); {} fixed, {} GradScaler (need <= {})",
                      lab::percent(m.zeroed_none), lab::percent(kSubstantialShare, 0),
                      lab::percent(m.zeroed_fixed, 2), lab::percent(m.zeroed_scaler, 2),
                      lab::percent(kNearZeroShare, 0)));
  const Run& d = m.demo;
  // Compares the step's return value with the weights themselves, and both with the lab's own overflow
  // verdict, so it fails on a step that calls opt.step() whatever the scaler found (weights move on an
  // overflowing step), on one that skips without an overflow (an inf left over in .grad without
  // zero_grad()), on one whose return value is not what happened (a step that returns true whatever it
  // did), and on a scale that never backs off (a fixed scale of the learner's own).
  const std::string mismatch = lab::skip_mismatch(d.stepped, d.overflowed, d.moved);
  r.check("skips-exactly-overflows",
          "the weights stood still on exactly the steps whose gradients overflowed, which step() reported "
          "skipped, and the scale grew again",
          d.skipped() > 0 && mismatch.empty() && regrowths(d) > 0,
          fmt::format("{} skipped, {} overflowed (the lab's own backward), {} steps moved the weights; {}; "
                      "{} regrowths",
                      d.skipped(), std::count(d.overflowed.begin(), d.overflowed.end(), true),
                      std::count(d.moved.begin(), d.moved.end(), true),
                      mismatch.empty() ? "the same steps" : mismatch, regrowths(d)),
          lab::skip_mismatch_values(d.stepped, d.overflowed, d.moved));
  // Against the lab's own fp32 step: fails on gradients unscaled twice, or an optimizer stepped besides
  // scaler.step (a mistake train_step would make in fp32 too, were it the reference); the steps that moved
  // the weights tell a step never taken apart.
  r.check(
      "scaler-matches-fp32",
      fmt::format("fp16 + GradScaler reaches fp32's final loss within {}", lab::percent(kLossTolerance, 0)),
      std::abs(ratio_scaled - 1) <= kLossTolerance,
      fmt::format("{:.3f}x fp32; {} of {} steps moved the weights", ratio_scaled,
                  std::count(m.scaled.moved.begin(), m.scaled.moved.end(), true), m.scaled.moved.size()),
      {{"loss_ratio", ratio_scaled},
       {"steps_moved", std::count(m.scaled.moved.begin(), m.scaled.moved.end(), true)}});
  // train_step with the scaler disabled must not scale: fails on a scale of the learner's own (or none used),
  // and on a train_step that never steps (its loss stays where it started, far above fp32's too).
  const auto unscaled_moved = std::count(m.unscaled.moved.begin(), m.unscaled.moved.end(), true);
  r.check(
      "unscaled-fp16-worse",
      fmt::format("fp16 without scaling trains, and ends at least {}x above fp32's final loss", kWorseFactor),
      ratio_none >= kWorseFactor && unscaled_moved > 0,
      fmt::format("{:.2f}x fp32; {} of {} steps moved the weights", ratio_none, unscaled_moved,
                  m.unscaled.moved.size()));
  r.takeaway(
      "multiplying the loss by a scale moves every gradient up by that factor, into fp16's range; unscaling "
      "in fp32 before the step undoes it, and a GradScaler picks the scale itself");
}

void report(const Result& m, lab::Report& r) {
  report_problem(m, r);
  report_gradients(m, r);
  report_training(m, r);
  report_details(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
