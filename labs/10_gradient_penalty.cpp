// Lab 10: a gradient penalty with a GradScaler (PyTorch's AMP examples, "Gradient penalty"; Q10).
//
// The penalty is the norm of the parameters' gradients, added to the loss. torch::autograd::grad of the
// *scaled* loss returns scaled gradients, so the recipe multiplies them by 1/scale before computing the
// norm under autocast, then scales loss + penalty for backward. The lab computes the penalty three ways
// on the same batch (float64 reference, fp16 recipe, fp16 without the manual unscale), then trains with
// the penalty in fp32 and in fp16 and compares the final losses.
//
// Run alone:  build/bin/lab10_gradient_penalty [--device cpu|cuda] [--quick] [--flip] [--json]
// (fp16 whatever --dtype says: the dtype a GradScaler exists for)
// --flip: the manual unscale is forgotten; the penalty is computed from the scaled gradients.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/registry.h"
#include "lab/underflow.h"  // copy_params
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 16, kHidden = 32, kOut = 4;  // a two-layer MLP regressor
constexpr int64_t kBatch = 64;
constexpr double kLr = 0.02;             // SGD learning rate
constexpr double kInitScale = 1024.0;    // 2^10: low enough that step 0 does not overflow, so its penalty can be compared
constexpr double kPenaltyTol = 0.01;     // fp16 penalty within 1% of float64's
constexpr double kTrainTol = 0.05;       // fp16 final loss within 5% of fp32's

using lab::underflow::Params;  // here: w1, b1, w2, b2
using lab::underflow::copy_params;

torch::Tensor forward(const Params& p, const torch::Tensor& x) {
  return torch::linear(torch::tanh(torch::linear(x, p[0], p[1])), p[2], p[3]);
}

struct Step {
  double loss = 0, penalty = 0, penalty_if_not_unscaled = 0;
  bool stepped = true;
};

// One training step with the penalty. scaler disabled (fp32/fp64): scale() and 1/scale are 1.
Step penalty_step(Params& p, torch::optim::SGD& opt, amp::GradScaler& scaler, torch::Device dev, bool fp16,
                  bool unscale, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  Step s;
  torch::Tensor loss;
  {
    amp::Autocast ac(dev, torch::kHalf, /*enabled=*/fp16);
    loss = torch::mse_loss(forward(p, x), y);
  }
  // Scaled gradients, kept in the graph so the penalty can be differentiated.
  auto scaled = torch::autograd::grad({scaler.scale(loss)}, p, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                      /*create_graph=*/true);
  const double inv_scale = 1.0 / scaler.get_scale();
  torch::Tensor penalty, forgotten;
  {
    amp::Autocast ac(dev, torch::kHalf, /*enabled=*/fp16);
    torch::Tensor sq = torch::zeros({}, loss.options()), sq_scaled = torch::zeros({}, loss.options());
    for (const auto& g : scaled) {
      sq = sq + (unscale ? g * inv_scale : g).pow(2).sum();
      sq_scaled = sq_scaled + g.detach().pow(2).sum();
    }
    penalty = sq.sqrt();
    forgotten = sq_scaled.sqrt();
    loss = loss + penalty;
  }
  scaler.scale(loss).backward();
  s.stepped = scaler.step(opt);
  scaler.update();
  s.loss = loss.item<double>() - penalty.item<double>();
  s.penalty = penalty.item<double>();
  s.penalty_if_not_unscaled = forgotten.item<double>();
  return s;
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("gradient-penalty", "Unscale the gradients by hand before a gradient penalty under autocast");
  const torch::Device dev = ctx.device;
  r.note("dtypes: fp32 parameters; fp16 autocast forward and penalty; float64 reference; penalty = ||dloss/dparams||_2");
  if (ctx.flip) r.note("FLIP: the penalty is computed from the scaled gradients (no multiply by 1/scale)");

  const Params init = {torch::randn({kHidden, kIn}, torch::device(dev)) / std::sqrt(double(kIn)),
                       torch::zeros({kHidden}, torch::device(dev)),
                       torch::randn({kOut, kHidden}, torch::device(dev)) / std::sqrt(double(kHidden)),
                       torch::zeros({kOut}, torch::device(dev))};
  auto teacher = copy_params(init);
  for (auto& t : teacher) t.detach().normal_();
  const auto x = torch::randn({kBatch, kIn}, torch::device(dev));
  torch::Tensor y;
  {
    torch::NoGradGuard no_grad;
    y = forward(teacher, x);
  }

  // Train: float64 reference, fp32, fp16 recipe (or, flipped, fp16 without the unscale).
  const int64_t steps = ctx.size(60, 200, 20);
  struct Run {
    const char* name;
    torch::ScalarType dtype;
    bool fp16;
    Step first, last;
    int skipped = 0;
    double final_scale = 1;
  };
  std::vector<Run> runs = {{"float64", torch::kDouble, false}, {"fp32", torch::kFloat, false},
                           {ctx.flip ? "fp16, no unscale" : "fp16 recipe", torch::kFloat, true}};
  for (auto& rr : runs) {
    Params p = copy_params(init, rr.dtype);
    torch::optim::SGD opt(p, torch::optim::SGDOptions(kLr));
    amp::GradScaler scaler(dev, {.init_scale = kInitScale, .enabled = rr.fp16});
    const auto xd = x.to(rr.dtype), yd = y.to(rr.dtype);
    for (int64_t s = 0; s < steps; ++s) {
      const Step st = penalty_step(p, opt, scaler, dev, rr.fp16, /*unscale=*/!(rr.fp16 && ctx.flip), xd, yd);
      if (s == 0) rr.first = st;
      rr.last = st;
      rr.skipped += !st.stepped;
    }
    rr.final_scale = scaler.get_scale();
  }
  const Run &ref = runs[0], &f32 = runs[1], &f16 = runs[2];

  r.section("The penalty at step 0 (same parameters, same batch)");
  auto& t = r.table("", {"run", "penalty", "vs float64", "scale"});
  for (const auto& rr : runs)
    t.row({rr.name, lab::sci(rr.first.penalty), fmt::format("{:.4g}x", rr.first.penalty / ref.first.penalty),
           rr.fp16 ? fmt::format("{:.0f}", kInitScale) : "1"});
  const double ratio = f16.first.penalty / ref.first.penalty;
  const double ratio_forgot = f16.first.penalty_if_not_unscaled / ref.first.penalty;
  r.observe("penalty_ref", "penalty at step 0, float64", ref.first.penalty, "", lab::sci(ref.first.penalty));
  r.observe("penalty_ratio", "fp16 penalty / float64 penalty", ratio, "x", fmt::format("{:.4f}x", ratio));
  r.observe("penalty_ratio_scaled_grads", "penalty from the scaled gradients / float64 penalty", ratio_forgot, "x",
            fmt::format("{:.4g}x", ratio_forgot));
  r.observe("init_scale", "the scale at step 0", kInitScale, "", fmt::format("{:.0f}", kInitScale));

  r.section(fmt::format("{} SGD steps with the penalty (lr {})", steps, kLr));
  auto& tt = r.table("", {"run", "final loss", "vs fp32", "final penalty", "skipped", "final scale"});
  for (const auto& rr : runs)
    tt.row({rr.name, lab::sci(rr.last.loss), fmt::format("{:.4f}x", rr.last.loss / f32.last.loss),
            lab::sci(rr.last.penalty), std::to_string(rr.skipped), fmt::format("{:.0f}", rr.final_scale)});
  const double loss_ratio = f16.last.loss / f32.last.loss;
  r.observe("loss_ratio_fp16", "fp16 final loss / fp32 final loss", loss_ratio, "x", fmt::format("{:.4f}x", loss_ratio));
  r.observe("skipped_steps", "fp16 steps skipped", f16.skipped);
  r.observe("trained", "fp32 final loss / initial loss", f32.last.loss / f32.first.loss, "x",
            fmt::format("{:.4f}x", f32.last.loss / f32.first.loss));

  r.check("the fp16 penalty, from unscaled gradients, matches float64's", std::abs(ratio - 1) <= kPenaltyTol,
          fmt::format("{:.4f}x the float64 penalty (need within {})", ratio, lab::percent(kPenaltyTol, 0)));
  r.check("computed from the scaled gradients instead, the penalty is off by the scale factor",
          std::abs(ratio_forgot / kInitScale - 1) <= kPenaltyTol,
          fmt::format("{:.4g}x float64's; the scale was {}", ratio_forgot, lab::num(kInitScale)));
  r.check("fp16 training with the penalty ends at fp32's loss", std::abs(loss_ratio - 1) <= kTrainTol && f32.last.loss < f32.first.loss,
          fmt::format("{:.4f}x fp32's final loss (need within {}); fp32 went from {} to {}", loss_ratio,
                      lab::percent(kTrainTol, 0), lab::sci(f32.first.loss), lab::sci(f32.last.loss)));
  r.takeaway("torch::autograd::grad of scaler.scale(loss) returns gradients multiplied by the scale: multiply them by "
             "1/scale before the penalty, then scale loss + penalty for backward. A norm computed from scaled "
             "gradients is scale times too large; a squared norm scale^2 times.");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
