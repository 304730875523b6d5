// Lab 09: gradient accumulation with a GradScaler (PyTorch's AMP examples, "Gradient accumulation"; Q9).
//
// An effective batch of 64 samples is split into 4 micro-batches. Each micro-batch's loss is divided by 4,
// scaled and back-propagated, so the gradients add up in .grad; unscale_/step/update run once per effective
// batch. The lab compares one such accumulated step with one step on the whole batch (fp32, then fp16
// autocast, each against a float64 reference), then trains with a scaler whose scale moves (it starts
// too high, backs off, and grows every 2 clean steps) and records the scale every micro-batch was
// multiplied by.
//
// Run alone:  build/bin/lab09_gradient_accumulation [--device cpu|cuda] [--quick] [--flip] [--json]
// (fp16 whatever --dtype says: the dtype a GradScaler exists for)
// --flip: the plain loop's step() and update() run after every micro-batch, as a naive port of the
//         one-batch loop would: the scale moves mid-batch and the accumulated gradients mix factors.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/registry.h"
#include "lab/underflow.h"  // copy_params
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 32, kHidden = 64, kOut = 8;  // a two-layer MLP regressor
constexpr int64_t kMicro = 4;                        // micro-batches per effective batch
constexpr int64_t kMicroBatch = 16;                  // samples per micro-batch
constexpr double kLr = 0.05;                         // SGD learning rate
constexpr double kInitScale = 1u << 30;              // far too high: the first steps overflow and back off
constexpr int64_t kGrowthInterval = 2;               // grow after 2 clean steps, so the scale keeps moving
constexpr double kFp32Tol = 1e-5;                    // fp32: accumulated vs whole batch, relative, summation order only
constexpr double kFp16TolFactor = 3.0;               // fp16: within 3x the whole batch's own error vs float64

using lab::underflow::Params;  // here: w1, b1, w2, b2
using lab::underflow::copy_params;

torch::Tensor forward(const Params& p, const torch::Tensor& x) {
  return torch::linear(torch::tanh(torch::linear(x, p[0], p[1])), p[2], p[3]);
}

torch::Tensor flat(const Params& p) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : p) parts.push_back(t.detach().to(torch::kDouble).flatten());
  return torch::cat(parts);
}

double rel(const torch::Tensor& a, const torch::Tensor& b) { return ((a - b).norm() / b.norm()).item<double>(); }

struct Loop {
  torch::Device device;
  std::optional<torch::ScalarType> autocast;  // nullopt: fp32
  bool naive = false;                         // --flip: step and update after every micro-batch
};

// One effective batch (x, y split into kMicro micro-batches); returns the scale each micro-batch used.
std::vector<double> accumulate(const Loop& loop, Params& p, torch::optim::SGD& opt, amp::GradScaler& scaler,
                               const torch::Tensor& x, const torch::Tensor& y, int* skipped) {
  std::vector<double> scales;
  opt.zero_grad();
  for (int64_t m = 0; m < kMicro; ++m) {
    const auto xs = x.narrow(/*dim=*/0, m * kMicroBatch, kMicroBatch), ys = y.narrow(/*dim=*/0, m * kMicroBatch, kMicroBatch);
    torch::Tensor loss;
    {
      amp::Autocast ac(loop.device, loop.autocast.value_or(torch::kHalf), /*enabled=*/loop.autocast.has_value());
      loss = torch::mse_loss(forward(p, xs), ys) / static_cast<double>(kMicro);  // the mean over the whole batch
    }
    scales.push_back(scaler.get_scale());
    scaler.scale(loss).backward();  // .grad accumulates scaled gradients
    if (loop.naive || m == kMicro - 1) {
      *skipped += !scaler.step(opt);
      scaler.update();
    }
  }
  return scales;
}

// The same step taken on the whole batch at once.
void whole(const Loop& loop, Params& p, torch::optim::SGD& opt, amp::GradScaler& scaler, const torch::Tensor& x,
           const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast ac(loop.device, loop.autocast.value_or(torch::kHalf), /*enabled=*/loop.autocast.has_value());
    loss = torch::mse_loss(forward(p, x), y);
  }
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("gradient-accumulation", "Accumulate scaled gradients over micro-batches; unscale, step and update once per batch");
  const torch::Device dev = ctx.device;
  const int64_t batch = kMicro * kMicroBatch;
  r.note(fmt::format("dtypes: fp32 parameters; fp16 autocast forward; float64 reference; effective batch {} = {} x {}",
                     batch, kMicro, kMicroBatch));
  if (ctx.flip) r.note("FLIP: step() and update() after every micro-batch (the one-batch loop, unchanged)");

  Params init = {torch::randn({kHidden, kIn}, torch::device(dev)) / std::sqrt(double(kIn)),
                 torch::zeros({kHidden}, torch::device(dev)),
                 torch::randn({kOut, kHidden}, torch::device(dev)) / std::sqrt(double(kHidden)),
                 torch::zeros({kOut}, torch::device(dev))};
  const auto teacher = copy_params(init);
  for (auto& t : teacher) t.detach().normal_();

  // One effective batch: accumulated vs whole, from the same start. SGD: the step is -lr * gradient.
  const auto x = torch::randn({batch, kIn}, torch::device(dev));
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = forward(teacher, x);
  }
  const auto start = flat(init);
  auto step_of = [&](std::optional<torch::ScalarType> ac, bool accumulated, bool naive, torch::ScalarType pdtype) {
    Params p = copy_params(init, pdtype);
    torch::optim::SGD opt(p, torch::optim::SGDOptions(kLr));
    amp::GradScaler scaler(dev, {.init_scale = 1024.0, .enabled = pdtype == torch::kFloat});
    const Loop loop{dev, ac, naive};
    int skipped = 0;
    if (accumulated) accumulate(loop, p, opt, scaler, x.to(pdtype), y.to(pdtype), &skipped);
    else whole(loop, p, opt, scaler, x.to(pdtype), y.to(pdtype));
    return flat(p) - start;
  };
  const auto ref = step_of(std::nullopt, /*accumulated=*/false, false, torch::kDouble);
  auto& t = r.table("One effective batch from the same start: the step, compared", {"precision", "loop", "vs whole batch", "vs float64"});
  double diff[2] = {0, 0}, whole_err[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const auto ac = i == 0 ? std::nullopt : std::optional<torch::ScalarType>(torch::kHalf);
    const auto big = step_of(ac, false, false, torch::kFloat);
    const auto acc = step_of(ac, true, ctx.flip, torch::kFloat);
    diff[i] = rel(acc, big);
    whole_err[i] = rel(big, ref);
    const char* name = i == 0 ? "fp32" : "fp16 autocast";
    t.row({name, "whole batch", "-", lab::sci(whole_err[i])});
    t.row({name, fmt::format("{} micro-batches", kMicro), lab::sci(diff[i]), lab::sci(rel(acc, ref))});
  }
  r.observe("micro_batches", "micro-batches per effective batch", kMicro);
  r.observe("accum_vs_whole_fp32", "fp32: accumulated step vs whole-batch step (relative)", diff[0], "", lab::sci(diff[0]));
  r.observe("accum_vs_whole_fp16", "fp16: accumulated step vs whole-batch step (relative)", diff[1], "", lab::sci(diff[1]));
  r.observe("whole_error_fp16", "fp16: whole-batch step vs float64 (relative)", whole_err[1], "", lab::sci(whole_err[1]));

  // Training with a moving scale: which scale did each micro-batch's loss get?
  const int64_t batches = ctx.size(24, 48, 12);
  Params p = copy_params(init);
  torch::optim::SGD opt(p, torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler(dev, {.init_scale = kInitScale, .growth_interval = kGrowthInterval});
  const Loop loop{dev, torch::kHalf, ctx.flip};
  int skipped = 0, mid_changes = 0, boundary_changes = 0;
  std::vector<double> all;
  for (int64_t b = 0; b < batches; ++b) {
    const auto xb = torch::randn({batch, kIn}, torch::device(dev));
    torch::Tensor yb;
    {
      torch::NoGradGuard no_grad;
      yb = forward(teacher, xb);
    }
    const auto scales = accumulate(loop, p, opt, scaler, xb, yb, &skipped);
    for (size_t m = 0; m < scales.size(); ++m) {
      if (!all.empty() && scales[m] != all.back()) (m == 0 ? boundary_changes : mid_changes)++;
      all.push_back(scales[m]);
    }
  }
  r.section(fmt::format("{} effective batches of {} micro-batches, GradScaler from 2^30, growth_interval {}", batches,
                        kMicro, kGrowthInterval));
  r.chart(lab::sparkline("scale each micro-batch's loss was multiplied by (log2)", all, /*log2_scale=*/true));
  r.observe("scale_changes_mid_batch", "scale changes inside an effective batch", mid_changes);
  r.observe("scale_changes_at_boundaries", "scale changes between effective batches", boundary_changes);
  r.observe("skipped_steps", "optimizer steps skipped (inf/NaN gradients)", skipped);
  r.observe("final_scale", "final scale", scaler.get_scale(), "", fmt::format("2^{:.0f}", std::log2(scaler.get_scale())));

  r.check("in fp32, N micro-batches give the same step as one big batch, to fp32 rounding", diff[0] <= kFp32Tol,
          fmt::format("relative difference {} (need <= {})", lab::sci(diff[0]), lab::sci(kFp32Tol, 1)));
  r.check("under fp16 autocast, the accumulated step is within the whole batch's own fp16 error",
          diff[1] <= kFp16TolFactor * whole_err[1],
          fmt::format("{} vs whole batch; the whole batch is {} from float64 (need <= {}x that)", lab::sci(diff[1]),
                      lab::sci(whole_err[1]), kFp16TolFactor));
  r.check("the scale changes only between effective batches, never inside one",
          mid_changes == 0 && boundary_changes > 0,
          fmt::format("{} changes inside, {} between batches", mid_changes, boundary_changes));
  r.takeaway("Divide each micro-batch's loss by their number, scale and back-propagate each one, and call unscale_, "
             "step and update once per effective batch: every gradient summed in .grad then carries the same scale.");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
