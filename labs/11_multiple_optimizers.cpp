// Lab 11: several models, losses and optimizers with one GradScaler (PyTorch's AMP examples,
// "Working with multiple models, losses, and optimizers"; Q11).
//
// Two models read the same input; two losses mix both outputs (loss0 = mse(2 out0 + 3 out1), loss1 =
// mse(3 out0 - 5 out1)), so each loss sends gradients into both models. Each optimizer gets its own
// scaler.step(); the scaler's update() runs once per iteration. At one step the lab writes an inf into
// model 1's gradients, as an overflow would, and watches which optimizer skips, what happens to the
// scale, and whether the next step's unscaled gradients still equal fp32's.
//
// Run alone:  build/bin/lab11_multiple_optimizers [--device cpu|cuda] [--quick] [--flip] [--json]
// (fp16 whatever --dtype says: the dtype a GradScaler exists for)
// --flip: one scaler per optimizer, each loss scaled by its "own" scaler, as a port that pairs them would.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 16, kOut = 4;  // each model: one Linear layer
constexpr int64_t kBatch = 32;
constexpr double kLr = 0.01;           // SGD learning rate, both optimizers
constexpr double kInitScale = 1024.0;  // low enough that nothing overflows by itself
constexpr double kGradTol = 0.02;      // unscaled fp16 grads within 2% (relative norm) of fp32's

using Params = std::vector<torch::Tensor>;  // weight, bias

Params make_model(torch::Device dev) {
  return {(torch::randn({kOut, kIn}, torch::device(dev)) / std::sqrt(double(kIn))).requires_grad_(true),
          torch::zeros({kOut}, torch::device(dev)).requires_grad_(true)};
}

torch::Tensor flat(const Params& p, bool grad = false) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : p) parts.push_back((grad ? t.grad() : t).detach().flatten().to(torch::kDouble));
  return torch::cat(parts);
}

std::pair<torch::Tensor, torch::Tensor> losses(const Params& m0, const Params& m1, const torch::Tensor& x,
                                               const torch::Tensor& y, torch::Device dev, bool fp16) {
  amp::Autocast ac(dev, torch::kHalf, /*enabled=*/fp16);
  const auto out0 = torch::linear(x, m0[0], m0[1]), out1 = torch::linear(x, m1[0], m1[1]);
  return {torch::mse_loss(2 * out0 + 3 * out1, y), torch::mse_loss(3 * out0 - 5 * out1, y)};
}

// fp32 gradients of loss0 + loss1 for both models at their current values (no autocast, no scaler).
std::pair<torch::Tensor, torch::Tensor> fp32_grads(const Params& m0, const Params& m1, const torch::Tensor& x,
                                                   const torch::Tensor& y, torch::Device dev) {
  Params a, b;
  for (const auto& t : m0) a.push_back(t.detach().clone().requires_grad_(true));
  for (const auto& t : m1) b.push_back(t.detach().clone().requires_grad_(true));
  auto [l0, l1] = losses(a, b, x, y, dev, /*fp16=*/false);
  (l0 + l1).backward();
  return {flat(a, true), flat(b, true)};
}

double rel(const torch::Tensor& a, const torch::Tensor& b) { return ((a - b).norm() / b.norm()).item<double>(); }

lab::Report run(const lab::Context& ctx) {
  lab::Report r("multiple-optimizers", "One GradScaler for several models and optimizers: a step each, one update");
  const torch::Device dev = ctx.device;
  r.note("dtypes: fp32 parameters; fp16 autocast forward and losses; both losses reach both models");
  if (ctx.flip) r.note("FLIP: two scalers, loss0 scaled by scaler 0 and loss1 by scaler 1, each updated once");

  Params m0 = make_model(dev), m1 = make_model(dev);
  torch::optim::SGD opt0(m0, torch::optim::SGDOptions(kLr)), opt1(m1, torch::optim::SGDOptions(kLr));
  amp::GradScaler shared(dev, {.init_scale = kInitScale}), second(dev, {.init_scale = kInitScale});
  amp::GradScaler& s0 = shared;
  amp::GradScaler& s1 = ctx.flip ? second : shared;
  const auto teacher = torch::randn({kOut, kIn}, torch::device(dev));

  const int64_t steps = ctx.size(12, 24, 8), inject_at = steps / 3;
  auto& t = r.table("Training, an inf written into model 1's gradients at step " + std::to_string(inject_at),
                    {"step", "scale loss0", "scale loss1", "opt0", "opt1", "grad error m0", "grad error m1"});
  int skipped0 = 0, skipped1 = 0, backoffs = 0;
  bool only_opt1_skipped_at_inject = false;
  double worst_after[2] = {0, 0}, scale_before = 0, scale_after = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const auto x = torch::randn({kBatch, kIn}, torch::device(dev));
    const auto y = torch::matmul(x, teacher.t());
    const auto [ref0, ref1] = fp32_grads(m0, m1, x, y, dev);
    const double sc0 = s0.get_scale(), sc1 = s1.get_scale();
    opt0.zero_grad();
    opt1.zero_grad();
    auto [loss0, loss1] = losses(m0, m1, x, y, dev, /*fp16=*/true);
    s0.scale(loss0).backward(/*gradient=*/{}, /*retain_graph=*/true);  // the graphs share out0 and out1
    s1.scale(loss1).backward();
    if (step == inject_at) m1[0].mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    s0.unscale_(opt0);  // explicit, so the unscaled gradients can be compared with fp32's
    s1.unscale_(opt1);
    double err[2] = {0, 0};
    if (step != inject_at) {
      err[0] = rel(flat(m0, true), ref0);
      err[1] = rel(flat(m1, true), ref1);
      if (step > inject_at)
        for (int k = 0; k < 2; ++k) worst_after[k] = std::max(worst_after[k], err[k]);
    }
    const bool stepped0 = s0.step(opt0), stepped1 = s1.step(opt1);
    s0.update();
    if (&s1 != &s0) s1.update();
    skipped0 += !stepped0;
    skipped1 += !stepped1;
    if (s0.get_scale() < sc0) ++backoffs;
    if (&s1 != &s0 && s1.get_scale() < sc1) ++backoffs;
    if (step == inject_at) {
      only_opt1_skipped_at_inject = stepped0 && !stepped1;
      scale_before = sc1;
      scale_after = s1.get_scale();
    }
    t.row({std::to_string(step), lab::num(sc0), lab::num(sc1), stepped0 ? "step" : "skip", stepped1 ? "step" : "skip",
           step == inject_at ? "(inf)" : lab::sci(err[0]), step == inject_at ? "(inf)" : lab::sci(err[1])});
  }
  const double final0 = s0.get_scale(), final1 = s1.get_scale();
  // A second update() in the same iteration has no inf checks to combine: the scaler refuses it.
  std::string second_update = "(no error)";
  try {
    s0.update();
  } catch (const amp::GradScalerError& e) {
    second_update = e.what();
  }
  r.note("a second update() after the last iteration's: amp::GradScalerError: " + second_update);
  const bool refused = second_update.find("No inf checks") != std::string::npos;
  r.observe("second_update_refused", "a second update() in one iteration refused", refused, "", refused ? "yes" : "no");
  r.observe("inject_step", "step whose model-1 gradients got an inf", static_cast<double>(inject_at));
  r.observe("skipped_opt0", "steps skipped by optimizer 0", skipped0);
  r.observe("skipped_opt1", "steps skipped by optimizer 1", skipped1);
  r.observe("backoffs", "scale back-offs", backoffs);
  r.observe("scale_before", "scale before the inf", scale_before, "", fmt::format("{:.0f}", scale_before));
  r.observe("scale_after", "scale after the inf", scale_after, "", fmt::format("{:.0f}", scale_after));
  r.observe("final_scale_ratio", "final scale of loss0 / of loss1", final0 / final1, "x", fmt::format("{:.4g}x", final0 / final1));
  r.observe("grad_error_after_m1", "model 1's unscaled gradients after the inf vs fp32 (relative)", worst_after[1], "",
            lab::sci(worst_after[1]));
  r.observe("grad_error_after_m0", "model 0's unscaled gradients after the inf vs fp32 (relative)", worst_after[0], "",
            lab::sci(worst_after[0]));

  r.check("the inf in model 1's gradients skipped optimizer 1's step only, that step and no other",
          only_opt1_skipped_at_inject && skipped0 == 0 && skipped1 == 1,
          fmt::format("at step {}: optimizer 0 {}, optimizer 1 {}; skipped in all: {} and {}", inject_at,
                      skipped0 == 0 ? "stepped" : "skipped", skipped1 >= 1 ? "skipped" : "stepped", skipped0, skipped1));
  r.check("the one scale both losses use backed off once, by half",
          backoffs == 1 && scale_after == 0.5 * scale_before && final0 == final1,
          fmt::format("{} back-off(s); {} -> {}; the losses' scales end {:.4g}x apart", backoffs, lab::num(scale_before),
                      lab::num(scale_after), final0 / final1));
  r.check("after the inf, both models' unscaled gradients still equal fp32's",
          worst_after[0] <= kGradTol && worst_after[1] <= kGradTol,
          fmt::format("worst relative error {} (model 0), {} (model 1); need <= {}", lab::sci(worst_after[0]),
                      lab::sci(worst_after[1]), lab::percent(kGradTol, 0)));
  r.takeaway("One scaler serves every loss and optimizer: scale each loss with it, give each optimizer its own "
             "unscale_/step (an inf skips only the optimizer whose gradients hold it), and call update() once per "
             "iteration. With a scaler per optimizer, gradients that flow across models come back divided by the "
             "wrong scale once the scales differ.");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
