// Lab 07: bf16 needs less loss scaling than fp16. Backs quiz question 7
// ("Why does bfloat16 often need less loss scaling than FP16?").
//
// The same small-gradient problem as lab 02 (src/lab/underflow.h: small targets, a loss averaged over
// 2048 outputs, an output layer that starts near zero). The lab
//   1. takes the first step's activation gradients (float64 reference) and casts them, unscaled, to
//      fp16 and to bf16: fp16's smallest value is 2^-24, bf16's is 2^-133 (fp32's exponent range), so
//      fp16 flushes a large share to zero and bf16 almost none; an autocast backward pass agrees (it
//      computes each gradient from 16-bit operands, so its share differs a little: lab 02 quotes that one),
//   2. trains four ways: fp32, bf16 without a scaler, fp16 without a scaler, fp16 with amp::GradScaler,
//   3. shows the price: bf16 keeps 8 significant bits to fp16's 11, so it rounds values about 8x coarser.
// CPU and CUDA run the same code and see the same formats.
//
// Run alone: build/bin/lab07_bf16_scaling [--device cpu|cuda] [--quick] [--flip]
// (--dtype does not apply: the lab uses both 16-bit types.)
// --flip puts fp16 wherever the lab uses bf16. The "bf16" gradients then underflow like fp16's and the
// "bf16" run trains like fp16 without a scaler, so the two bf16 checks fail.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/grad_scaler.h"
#include "lab/registry.h"
#include "lab/underflow.h"

namespace {

namespace uf = lab::underflow;

constexpr int64_t kTrainSteps = 300;           // Adam steps per training run (as lab 02)
constexpr int64_t kTrainStepsQuick = 80;       // ... in quick mode
constexpr double kLearningRate = 3e-3;         // Adam, the same for every run
constexpr int64_t kScalerGrowthInterval = 50;  // fp16's GradScaler: default init 2^16, grows every 50 clean steps

// Check thresholds.
constexpr double kNearZeroShare = 0.01;     // bf16 at scale 1 zeroes at most 1% of the nonzero gradients
constexpr double kSubstantialShare = 0.20;  // fp16 at scale 1 zeroes at least 20%
constexpr double kAboutAsWell = 0.10;       // bf16 without a scaler ends within 10% of fp16 + GradScaler's loss
constexpr double kWorseFactor = 1.5;        // fp16 without a scaler ends at least 1.5x fp16 + GradScaler's loss

// Mean relative rounding error of `values` cast to `dtype`, against their float64 originals.
double mean_rel_error(const torch::Tensor& values, torch::ScalarType dtype) {
  const torch::Tensor v = values.to(torch::kDouble);
  return ((v.to(dtype).to(torch::kDouble) - v).abs() / v.abs()).mean().item<double>();
}

lab::Report run(const lab::Context& ctx) {
  // The wide-range 16-bit type; --flip swaps in fp16, removing the wide exponent range.
  const torch::ScalarType wide = ctx.flip ? torch::kHalf : torch::kBFloat16;
  const torch::ScalarType half = torch::kHalf;
  const std::string wide_name = ctx.flip ? "\"bf16\" (fp16)" : "bf16";
  lab::Report r("bf16-scaling", "bf16 needs less loss scaling than fp16");
  r.note("dtypes: bf16 and fp16 autocast, fp32 master weights, float64 reference");
  if (ctx.flip) r.note("FLIP: fp16 is used wherever the lab uses bf16");

  r.table("the formats' ends (std::numeric_limits)", {"format", "smallest subnormal", "smallest normal", "epsilon"})
      .row({"fp16", lab::sci(std::numeric_limits<c10::Half>::denorm_min()), lab::sci(std::numeric_limits<c10::Half>::min()),
            lab::sci(std::numeric_limits<c10::Half>::epsilon())})
      .row({"bf16", lab::sci(std::numeric_limits<c10::BFloat16>::denorm_min()),
            lab::sci(std::numeric_limits<c10::BFloat16>::min()), lab::sci(std::numeric_limits<c10::BFloat16>::epsilon())});

  // 1. Lab 02's step-0 activation gradients, unscaled, in each format.
  const uf::Problem problem = uf::make_problem({}, ctx.device);
  const torch::Tensor ref = uf::activation_grads(problem.init, problem, /*autocast_dtype=*/std::nullopt);
  r.section(fmt::format("Step-0 activation gradients ({} values), no loss scaling", ref.numel()));
  const double median = ref.abs().median().item<double>();
  r.observe("median_grad", "median |gradient| (float64)", median, "",
            fmt::format("{}  (fp16's smallest subnormal: {})", lab::sci(median),
                        lab::sci(std::numeric_limits<c10::Half>::denorm_min())));
  const double cast_half = uf::cast_zeroed_share(ref, half);
  const double cast_wide = uf::cast_zeroed_share(ref, wide);
  const double pass_half = uf::zeroed_share(ref, uf::activation_grads(problem.init, problem, half));
  const double pass_wide = uf::zeroed_share(ref, uf::activation_grads(problem.init, problem, wide));
  r.note("two counts of the same gradients: a plain cast rounds each float64 value once; an autocast backward "
         "pass computes each one from 16-bit operands (lab 02 quotes this count as 'fp16 zeroed, no scaling')");
  r.observe("underflow_share_fp16", "fp16: zeroed by a plain cast", 100 * cast_half, "%");
  r.observe("underflow_share_fp16_backward", "fp16: zeroed in an autocast backward pass", 100 * pass_half, "%");
  r.observe("underflow_share_bf16", wide_name + ": zeroed by a plain cast", 100 * cast_wide, "%");
  r.observe("underflow_share_bf16_backward", wide_name + ": zeroed in an autocast backward pass", 100 * pass_wide, "%");

  // 2. Training: fp32 for reference, bf16 without a scaler, fp16 without and with a GradScaler.
  const int64_t steps = ctx.size(kTrainSteps, kTrainSteps, kTrainStepsQuick);
  r.section(fmt::format("Training, {} Adam steps (lr {}): final MSE in float64, x fp16 + GradScaler's", steps,
                        kLearningRate));
  const uf::TrainResult fp32 = uf::train(problem, {.autocast = std::nullopt, .scaler = std::nullopt,
                                                   .steps = steps, .lr = kLearningRate});
  const uf::TrainResult wide_run = uf::train(problem, {.autocast = wide, .scaler = std::nullopt,
                                                       .steps = steps, .lr = kLearningRate});
  const uf::TrainResult half_none = uf::train(problem, {.autocast = half, .scaler = std::nullopt,
                                                        .steps = steps, .lr = kLearningRate});
  const uf::TrainResult half_scaled = uf::train(
      problem, {.autocast = half, .scaler = amp::GradScalerOptions{.growth_interval = kScalerGrowthInterval},
                .steps = steps, .lr = kLearningRate});
  const double base = half_scaled.final_loss;  // the yardstick: fp16 done properly
  const double ratio_fp32 = fp32.final_loss / base;
  const double ratio_wide = wide_run.final_loss / base;
  const double ratio_half_none = half_none.final_loss / base;
  auto text = [&](double ratio, double loss) { return fmt::format("{:.2f}x  ({})", ratio, lab::sci(loss)); };
  r.observe("final_loss_fp16_scaler", "fp16 + GradScaler (the yardstick)", base, "",
            fmt::format("{}  (scale ended at 2^{:g})", lab::sci(base), std::log2(half_scaled.scale.back())));
  r.observe("loss_ratio_fp32", "fp32", ratio_fp32, "x", text(ratio_fp32, fp32.final_loss));
  r.observe("loss_ratio_bf16", wide_name + ", no scaler", ratio_wide, "x", text(ratio_wide, wide_run.final_loss));
  r.observe("loss_ratio_fp16_unscaled", "fp16, no scaler", ratio_half_none, "x", text(ratio_half_none, half_none.final_loss));

  // 3. The price of bf16's range: 3 fewer significand bits, measured on the N(0,1) inputs.
  r.section("Rounding: the problem's inputs x, cast to each format");
  const double err_half = mean_rel_error(problem.x, half);
  const double err_wide = mean_rel_error(problem.x, wide);
  r.observe("rel_error_fp16", "fp16 mean relative error", err_half, "", lab::sci(err_half));
  r.observe("rel_error_bf16", wide_name + " mean relative error", err_wide, "", lab::sci(err_wide));
  r.observe("rel_error_ratio", wide_name + " error / fp16 error", err_wide / err_half, "x",
            fmt::format("{:.1f}x  (fp16 keeps 11 significant bits, bf16 8)", err_wide / err_half));

  r.check(fmt::format("{} at scale 1 zeroes (almost) no gradient, fp16 a substantial share, cast or in backward", wide_name),
          std::max(cast_wide, pass_wide) <= kNearZeroShare && std::min(cast_half, pass_half) >= kSubstantialShare,
          fmt::format("{} {} cast, {} backward (need <= {}); fp16 {} cast, {} backward (need >= {})", wide_name,
                      lab::percent(cast_wide, 2), lab::percent(pass_wide, 2), lab::percent(kNearZeroShare, 0),
                      lab::percent(cast_half, 2), lab::percent(pass_half, 2), lab::percent(kSubstantialShare, 0)));
  r.check(fmt::format("{} without a scaler trains about as well as fp16 with one", wide_name),
          std::abs(ratio_wide - 1) <= kAboutAsWell,
          fmt::format("{:.2f}x fp16 + GradScaler's loss (need within {})", ratio_wide, lab::percent(kAboutAsWell, 0)));
  r.check("fp16 without a scaler does worse",
          ratio_half_none >= kWorseFactor, fmt::format("{:.2f}x fp16 + GradScaler's loss (need >= {})",
                                                       ratio_half_none, kWorseFactor));
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
