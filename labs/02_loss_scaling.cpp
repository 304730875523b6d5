// Lab 02: loss scaling rescues fp16 gradients from underflow. Backs quiz question 2
// ("What problem does loss scaling solve in FP16 training?").
//
// A small regression whose activation gradients are genuinely tiny (small targets, a loss averaged over
// 2048 outputs, an output layer that starts near zero; see src/lab/underflow.h) is trained with fp32
// master weights under amp::Autocast(fp16). The lab
//   1. histograms the first step's activation gradients (float64 reference) against fp16's limits,
//   2. measures the share of them that fp16 flushes to zero: without scaling, with a fixed scale, and
//      with an amp::GradScaler (in the spirit of the SSD histogram in Micikevicius et al. 2018),
//   3. shows dynamic scaling: a GradScaler whose scale starts too high overflows, skips those steps,
//      backs off, and grows again after growth_interval clean steps,
//   4. trains the model in fp32, in fp16 without scaling and in fp16 with a GradScaler.
// fp16 is always used: loss scaling is an fp16 matter (--dtype does not apply; lab 07 shows why bf16
// needs none). CPU and CUDA run the same code; fp16 subnormals behave the same on both.
//
// Run alone: build/bin/lab02_loss_scaling [--device cpu|cuda] [--quick] [--flip]
// --flip sums the loss over the 2048 outputs instead of averaging it: every gradient is 2^11 times
// larger and sits inside fp16's range, while Adam's steps stay the same. Nothing underflows, scaling
// rescues nothing, and the checks "substantial underflow without scaling" and "training without
// scaling does worse" fail.
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/registry.h"
#include "lab/underflow.h"

namespace {

namespace uf = lab::underflow;

constexpr int64_t kTrainSteps = 300;           // Adam steps per training run
constexpr int64_t kTrainStepsQuick = 80;       // ... in quick mode (the gap is smaller but clear)
constexpr double kLearningRate = 3e-3;         // Adam, the same for every run
constexpr double kFixedScale = 1024;           // 2^10, a hand-picked constant scale (the paper used 8 to 32768)
constexpr int64_t kScalerGrowthInterval = 50;  // training run's GradScaler: default init 2^16, grows every 50 clean steps
constexpr double kDemoInitScale = 1 << 30;     // dynamic-scaling demo: a scale far too high, so it must overflow
constexpr int64_t kDemoGrowthInterval = 8;     // ... growing again after 8 clean steps (PyTorch's default: 2000)
constexpr int64_t kDemoSteps = 48;             // demo length, one chart glyph per step
constexpr int64_t kDemoStepsQuick = 32;

// Check thresholds.
constexpr double kSubstantialShare = 0.20;  // without scaling, at least 20% of the nonzero gradients become 0
constexpr double kNearZeroShare = 0.01;     // with a scale, at most 1% do
constexpr double kLossTolerance = 0.05;     // fp16 + GradScaler ends within 5% of fp32's final loss
constexpr double kWorseFactor = 1.5;        // fp16 without scaling ends at least 1.5x fp32's final loss

std::string pow2(double v) { return fmt::format("2^{:g}", std::log2(v)); }

lab::Report run(const lab::Context& ctx) {
  const torch::ScalarType half = torch::kHalf;
  lab::Report r("loss-scaling", "Loss scaling rescues fp16 gradients from underflow");
  r.note("dtypes: fp32 master weights, fp16 autocast forward and gradients, float64 reference");
  uf::ProblemOptions opts;
  if (ctx.flip) {
    opts.loss_multiplier = static_cast<double>(opts.batch * opts.outputs);
    r.note(fmt::format("FLIP: loss summed over {} outputs, not averaged: gradients {}x larger, Adam steps unchanged",
                       opts.batch * opts.outputs, pow2(opts.loss_multiplier)));
  }
  const uf::Problem problem = uf::make_problem(opts, ctx.device);
  // Why the gradients are small: the problem is built so (src/lab/underflow.h), as in the paper's detection nets.
  if (!ctx.flip)
    r.note(fmt::format("the gradients here are small by construction: targets with std {}, the MSE averaged over {} "
                       "outputs (each gradient is 2 x residual / {}), an output layer initialised at {} of the default",
                       opts.target_std, opts.batch * opts.outputs, opts.batch * opts.outputs,
                       lab::percent(opts.output_init, 0)));

  // 1-2. The first step's activation gradients: the float64 reference, then fp16 with three scales.
  r.section(fmt::format("Activation gradients at step 0 ({} values)", problem.x.size(0) * (2 * opts.hidden + opts.outputs)));
  const torch::Tensor ref = uf::activation_grads(problem.init, problem, /*autocast_dtype=*/std::nullopt);
  r.chart(lab::log2_histogram("|gradient| in float64, by power of two", ref, /*lo=*/-39, /*hi=*/16, /*step=*/5,
                              {{-25, "fp16 rounds |x| <= 2^-25 to 0, (2^-25,2^-24) up to 2^-24"},
                               {-24, "fp16 subnormals from 2^-24 (smallest): kept, with fewer bits"},
                               {-19, "fp16 subnormals up to 2^-14: kept, with fewer bits"},
                               {-14, "fp16 smallest normal 2^-14"},
                               {15, "fp16 largest 65504 (~2^16)"}}));
  const double zeroed_none = uf::zeroed_share(ref, uf::activation_grads(problem.init, problem, half, /*scale=*/1.0));
  const double zeroed_fixed = uf::zeroed_share(ref, uf::activation_grads(problem.init, problem, half, kFixedScale));
  amp::GradScaler probe(ctx.device);  // PyTorch's defaults: starts at 2^16
  const double zeroed_scaler = uf::zeroed_share(ref, uf::activation_grads(problem.init, problem, half, probe));
  r.observe("underflow_share_unscaled", "fp16 zeroed, no scaling", 100 * zeroed_none, "%");
  r.observe("underflow_share_fixed", "fp16 zeroed, fixed scale " + pow2(kFixedScale), 100 * zeroed_fixed, "%");
  r.observe("underflow_share_scaler", "fp16 zeroed, GradScaler at " + pow2(probe.get_scale()), 100 * zeroed_scaler, "%");

  // 3. Dynamic scaling: start too high, overflow and skip, back off, grow again.
  const int64_t demo_steps = ctx.size(kDemoSteps, kDemoSteps, kDemoStepsQuick);
  r.section(fmt::format("Dynamic scaling: GradScaler from {}, growth_interval {}, {} steps", pow2(kDemoInitScale),
                        kDemoGrowthInterval, demo_steps));
  const uf::TrainResult demo = uf::train(
      problem, {.autocast = half,
                .scaler = amp::GradScalerOptions{.init_scale = kDemoInitScale, .growth_interval = kDemoGrowthInterval},
                .steps = demo_steps, .lr = kLearningRate});
  r.chart(lab::sparkline("loss scale at each step (log2)", demo.scale, /*log2_scale=*/true));
  int64_t overflowed = 0, regrowths = 0;
  for (size_t i = 0; i < demo.scale.size(); ++i) {
    overflowed += demo.overflowed[i];
    if (i > 0 && demo.scale[i] > demo.scale[i - 1]) ++regrowths;
  }
  r.observe("skipped_steps", "steps skipped by scaler.step()", static_cast<double>(demo.skipped()), "",
            fmt::format("{} of {}; {} had inf/NaN grads; the scale grew {} times", demo.skipped(), demo_steps,
                        overflowed, regrowths));

  // 4. Training: fp32, fp16 without scaling, fp16 with a GradScaler.
  const int64_t steps = ctx.size(kTrainSteps, kTrainSteps, kTrainStepsQuick);
  r.section(fmt::format("Training, {} Adam steps (lr {}), final MSE in float64", steps, kLearningRate));
  const uf::TrainResult fp32 = uf::train(problem, {.autocast = std::nullopt, .scaler = std::nullopt,
                                                   .steps = steps, .lr = kLearningRate});
  const uf::TrainResult none = uf::train(problem, {.autocast = half, .scaler = std::nullopt,
                                                   .steps = steps, .lr = kLearningRate});
  const uf::TrainResult scaled = uf::train(
      problem, {.autocast = half, .scaler = amp::GradScalerOptions{.growth_interval = kScalerGrowthInterval},
                .steps = steps, .lr = kLearningRate});
  const double ratio_none = none.final_loss / fp32.final_loss;
  const double ratio_scaled = scaled.final_loss / fp32.final_loss;
  r.observe("final_loss_fp32", "fp32", fp32.final_loss, "", lab::sci(fp32.final_loss));
  r.observe("loss_ratio_unscaled", "fp16, no scaling", ratio_none, "x",
            fmt::format("{:.2f}x fp32  ({})", ratio_none, lab::sci(none.final_loss)));
  r.observe("loss_ratio_scaler", "fp16 + GradScaler", ratio_scaled, "x",
            fmt::format("{:.2f}x fp32  ({}; steps skipped: {}; scale ended at {})", ratio_scaled,
                        lab::sci(scaled.final_loss), scaled.skipped(), pow2(scaled.scale.back())));

  r.check("fp16 flushes a substantial share of the gradients to zero without scaling, almost none with it",
          zeroed_none >= kSubstantialShare && zeroed_fixed <= kNearZeroShare && zeroed_scaler <= kNearZeroShare,
          fmt::format("zeroed: {} unscaled (need >= {}); {} fixed, {} GradScaler (need <= {})",
                      lab::percent(zeroed_none), lab::percent(kSubstantialShare, 0), lab::percent(zeroed_fixed, 2),
                      lab::percent(zeroed_scaler, 2), lab::percent(kNearZeroShare, 0)));
  r.check("the scaler skipped exactly the steps whose scaled gradients overflowed, then grew the scale again",
          demo.skipped() > 0 && demo.skipped_exactly_overflowed() && regrowths > 0,
          fmt::format("{} skipped, {} overflowed (isfinite on the grads before step), same steps: {}; {} regrowths",
                      demo.skipped(), overflowed, demo.skipped_exactly_overflowed() ? "yes" : "no", regrowths));
  r.check(fmt::format("fp16 + GradScaler reaches fp32's final loss within {}", lab::percent(kLossTolerance, 0)),
          std::abs(ratio_scaled - 1) <= kLossTolerance, fmt::format("{:.3f}x fp32", ratio_scaled));
  r.check(fmt::format("fp16 without scaling ends at least {}x above fp32's final loss", kWorseFactor),
          ratio_none >= kWorseFactor, fmt::format("{:.2f}x fp32", ratio_none));
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
