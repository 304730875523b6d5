// Lab 11: several models, losses and optimizers with one GradScaler (PyTorch's AMP examples, "Working with
// multiple models, losses, and optimizers"; Q11). The AMP code is in amp.cpp.
//
// Two models read the same input; two losses mix both outputs (loss0 = mse(2 out0 + 3 out1), loss1 =
// mse(3 out0 - 5 out1)), so each loss sends gradients into both models. The recipe scales each loss with
// the one scaler, gives each optimizer its own scaler.step(), and calls update() once per step of training.
// At one step the lab writes an inf into model 0's gradients, as an overflow would, and at a later one into
// model 1's, and runs three loops on the same data: the recipe; update() after each optimizer's step
// (Python accepts it); and a scaler per optimizer. For each it records which optimizer skipped (read from
// its weights, beside the flag step_recipe returns), how the scale backed off and grew, the factor between
// the gradients each optimizer applied and the correctly unscaled ones, how far the applied gradients (the
// weights' change / lr) are from fp32's, and how far the gradients backward() left are from scale0 x fp32's
// of loss0 + scale1 x fp32's of loss1 (the lab's own fp32 gradients of each loss, in judge.cpp).
//
// Run:  build/bin/lab11_multiple_optimizers [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16: the type a GradScaler exists for; the lab refuses --dtype)
// --flip: the lab's own loop gives each optimizer its own scaler and scales each loss with "its" scaler,
//         as a port that pairs them would: check unscaled-grads-match-fp32 fails.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/grad_scaler.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 16, kOut = 4;   // each model: one Linear layer
constexpr int64_t kBatch = 32;          // a fresh batch every step
constexpr int64_t kSteps = 12;          // SGD steps per loop, infs written in at steps kSteps/3, 2 kSteps/3
constexpr double kLr = 0.01;            // SGD learning rate, both optimizers
constexpr double kInitScale = 1024;     // low enough that nothing overflows by itself, even grown 16x
constexpr int64_t kGrowthInterval = 4;  // the scale doubles after 4 clean updates (PyTorch: 2000)
constexpr double kGradTol = 0.02;       // fp16 gradients within 2% (relative norm) of fp32's
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using namespace lab11;
using judge::Grads, judge::rel, judge::worst_of;  // the judge's reference and measures (judge.cpp)

// ---- The other loops the question offers ---------------------------------------------------------------

// update() after each optimizer's step, one scaler. Python accepts it (update() refuses only when no
// unscale_ or step came since the last one), but when the scale moves between the two steps, optimizer 1's
// gradients, multiplied by the old scale in backward, are divided by the new one.
Stepped step_update_each(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler) {
  const bool s0 = scaler.step(o0);
  scaler.update();
  const bool s1 = scaler.step(o1);
  scaler.update();
  return {s0, s1};
}

// A scaler per optimizer, each loss scaled by "its" scaler in backward(), each updated after its step
// (--flip: the lab's own loop).
Stepped step_per_scaler(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler0,
                        amp::GradScaler& scaler1) {
  const bool s0 = scaler0.step(o0);
  scaler0.update();
  const bool s1 = scaler1.step(o1);
  scaler1.update();
  return {s0, s1};
}

// ---- measure -----------------------------------------------------------------------------------------

enum class Loop { Recipe, UpdateEach, PerScaler };

struct StepRecord {
  double scale_loss[2];       // the scale each loss was multiplied by
  Stepped stepped;            // what the step function returned
  Stepped moved;              // whether each model's weights changed: what the step did
  double factor[2] = {1, 1};  // applied gradients / correctly unscaled ones, per optimizer (one scaler only)
  double error[2] = {0, 0};  // applied gradients (weight change / lr) vs fp32's, relative (0 at a right skip)
  double backward_error = 0;  // the gradients backward() left vs the lab's scaled fp32 ones, worst model
};

struct LoopRun {
  Loop loop;
  std::vector<StepRecord> steps;
  double final_scale[2] = {0, 0};
  std::string error;  // what a scaler raised, if anything
  int grad_bits = 0;  // the most mantissa bits a gradient backward() sent into a weight carried (grad_bits())
};

struct Result {
  lab::Context ctx;
  int64_t inject_at[2] = {0, 0};          // the step whose model-k gradients get an inf
  LoopRun main, update_each, per_scaler;  // main: the recipe (--flip: a scaler per optimizer)
  std::string update_alone_error;         // update() with no unscale_/step since the last one
};

torch::Tensor flat_grads(const torch::nn::Linear& m) {
  return torch::cat({m->weight.grad().detach().flatten(), m->bias.grad().detach().flatten()})
      .to(torch::kDouble);
}

torch::Tensor flat_weights(const torch::nn::Linear& m) {
  return torch::cat({m->weight.detach().flatten(), m->bias.detach().flatten()}).to(torch::kDouble);
}

// The ratio applied / correct over the nonzero entries, when it is one number; NaN when it varies.
double factor_of(const torch::Tensor& applied, const torch::Tensor& correct) {
  const auto nz = correct != 0;
  const auto ratio = applied.masked_select(nz) / correct.masked_select(nz);
  const double lo = ratio.min().item<double>(), hi = ratio.max().item<double>();
  return lo == hi ? lo : kNaN;
}

// What optimizer k's step did, read from its model's weights (SGD, no momentum: the applied gradient is the
// change / lr), not from .grad, which a step may zero, nor from the flag it returns.
void record_step(StepRecord& rec, int k, const torch::nn::Linear& m, const torch::Tensor& w_before,
                 const torch::Tensor& scaled, const torch::Tensor& fp32, bool at_inf, Loop loop) {
  const torch::Tensor applied = (w_before - flat_weights(m)) / kLr;
  rec.moved[k] = !applied.eq(0).all().item<bool>();  // a NaN in the weights counts as moved
  // At its model's inf the right step applies nothing; at any other step fp32's gradients (a skip there
  // applied 0: error 1).
  if (at_inf) {
    rec.error[k] = rec.moved[k] ? std::numeric_limits<double>::infinity() : 0.0;
    return;
  }
  rec.error[k] = rel(applied, fp32);
  if (!rec.moved[k]) return;
  // The factor from .grad, unscaled in place by step(): exact, where the weights' change is rounded. A
  // scaler per optimizer mixes two scales in one .grad: no single correct factor to compare with.
  rec.factor[k] = loop == Loop::PerScaler || !m->weight.grad().defined()
                      ? kNaN
                      : factor_of(flat_grads(m), scaled / rec.scale_loss[k]);
}

LoopRun train(Loop loop, const Result& r, const torch::Tensor& init0, const torch::Tensor& init1,
              const torch::Tensor& teacher, int64_t steps) {
  const torch::Device dev = teacher.device();
  torch::nn::Linear m0(kIn, kOut), m1(kIn, kOut);
  {
    torch::NoGradGuard no_grad;
    for (auto [m, init] : {std::pair{&m0, init0}, std::pair{&m1, init1}}) {
      (*m)->to(dev);
      (*m)->weight.copy_(init);
      (*m)->bias.zero_();
    }
  }
  torch::optim::SGD o0(m0->parameters(), torch::optim::SGDOptions(kLr));
  torch::optim::SGD o1(m1->parameters(), torch::optim::SGDOptions(kLr));
  const amp::GradScalerOptions opts{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
  amp::GradScaler scaler0(dev, opts), scaler1(dev, opts);
  amp::GradScaler& s1 = loop == Loop::PerScaler ? scaler1 : scaler0;  // the scaler of loss 1 and optimizer 1
  LoopRun run{.loop = loop};
  // What the forward passes ran in, read from the gradients backward() sends into the weights (a hook on
  // each weight sees each backward pass's gradient before .grad sums them).
  for (torch::nn::Linear* m : {&m0, &m1})
    (*m)->weight.register_hook(
        [&run](const torch::Tensor& g) { run.grad_bits = std::max(run.grad_bits, judge::grad_bits(g)); });
  torch::manual_seed(r.ctx.seed + 1);  // the same batches for every loop
  for (int64_t step = 0; step < steps; ++step) {
    const auto x = torch::randn({kBatch, kIn}, torch::device(dev));
    const auto y = torch::matmul(x, teacher.t());
    const Grads g = judge::fp32_grads(m0, m1, x, y);
    StepRecord rec{.scale_loss = {scaler0.get_scale(), s1.get_scale()}};
    o0.zero_grad();
    o1.zero_grad();
    backward(m0, m1, scaler0, s1, x, y);
    torch::Tensor before[2] = {flat_grads(m0), flat_grads(m1)};  // scaled, as backward left them
    rec.backward_error = judge::backward_error(before, g, rec.scale_loss);
    for (int k = 0; k < 2; ++k) {
      if (step != r.inject_at[k]) continue;
      (k == 0 ? m0 : m1)->weight.mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
      before[k] = flat_grads(k == 0 ? m0 : m1);
    }
    const torch::Tensor w_before[2] = {flat_weights(m0), flat_weights(m1)};
    try {
      rec.stepped = loop == Loop::Recipe       ? step_recipe(o0, o1, scaler0)
                    : loop == Loop::UpdateEach ? step_update_each(o0, o1, scaler0)
                                               : step_per_scaler(o0, o1, scaler0, scaler1);
    } catch (const amp::GradScalerError& e) {
      if (loop == Loop::Recipe) throw;  // the learner's steps: the lab stops with the scaler's message
      run.error = e.what();
      break;
    }
    for (int k = 0; k < 2; ++k)
      record_step(rec, k, k == 0 ? m0 : m1, w_before[k], before[k], g[0][k] + g[1][k], step == r.inject_at[k],
                  loop);
    run.steps.push_back(rec);
  }
  run.final_scale[0] = scaler0.get_scale();
  run.final_scale[1] = s1.get_scale();
  return run;
}

// update() with no unscale_ or step since the last update() (Python: "No inf checks were recorded ...").
std::string update_alone(torch::Device dev) {
  amp::GradScaler scaler(dev, {.init_scale = kInitScale});
  scaler.scale(torch::ones({}, torch::device(dev)));  // makes the scale, records no inf check
  try {
    scaler.update();
  } catch (const amp::GradScalerError& e) {
    return e.what();
  }
  return "";
}

Result measure(const lab::Context& ctx) {
  const int64_t steps = kSteps;
  Result r{.ctx = ctx, .inject_at = {steps / 3, 2 * steps / 3}};
  const auto init0 = torch::randn({kOut, kIn}, torch::device(ctx.device)) / std::sqrt(double(kIn));
  const auto init1 = torch::randn({kOut, kIn}, torch::device(ctx.device)) / std::sqrt(double(kIn));
  const auto teacher = torch::randn({kOut, kIn}, torch::device(ctx.device)) / std::sqrt(double(kIn));
  r.main = train(ctx.flip ? Loop::PerScaler : Loop::Recipe, r, init0, init1, teacher, steps);
  r.update_each = train(Loop::UpdateEach, r, init0, init1, teacher, steps);
  r.per_scaler = train(Loop::PerScaler, r, init0, init1, teacher, steps);
  r.update_alone_error = update_alone(ctx.device);
  return r;
}

// ---- report ------------------------------------------------------------------------------------------

struct Summary {
  int skipped[2] = {0, 0}, backoffs = 0, halved_at_inf = 0, growths = 0;
  int skips_missed = 0;  // infs whose optimizer moved its weights anyway
  int flags_wrong = 0;   // (step, optimizer) pairs whose returned flag disagrees with the weights
  // Steps off (error above kGradTol, or NaN; a step the loop never reached counts): the hints' observations,
  // counts where the errors may be NaN.
  int grad_off[2] = {0, 0}, backward_off = 0;
  double worst[2] = {0, 0}, worst_after[2] = {0, 0};  // applied gradients vs fp32's: all steps, after inf 0
  double worst_backward = 0;                          // backward()'s gradients vs the scaled fp32 ones
  std::map<double, int> factors1;                     // optimizer 1's factors: how many steps each
  bool skipped_only_at_inf = true;  // each optimizer skipped at its model's inf, and nowhere else
};

Summary summarize(const LoopRun& run, const int64_t (&inject_at)[2]) {
  Summary s;
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const StepRecord& rec = run.steps[i];
    const auto step = static_cast<int64_t>(i);
    const auto next = [&](int k) {
      return i + 1 < run.steps.size() ? run.steps[i + 1].scale_loss[k] : run.final_scale[k];
    };
    for (int k = 0; k < 2; ++k) {
      const bool at_inf = step == inject_at[k];
      s.skipped[k] += !rec.moved[k];
      s.skipped_only_at_inf &= rec.moved[k] == !at_inf;
      s.skips_missed += at_inf && rec.moved[k];
      s.flags_wrong += rec.stepped[k] != rec.moved[k];
      s.worst[k] = worst_of(s.worst[k], rec.error[k]);
      s.grad_off[k] += !(rec.error[k] <= kGradTol);
      if (step > inject_at[0]) s.worst_after[k] = worst_of(s.worst_after[k], rec.error[k]);
      // The scale of the scaler that saw this inf (in the recipe both losses' scales are the one scale).
      s.halved_at_inf += at_inf && next(k) == 0.5 * rec.scale_loss[k];
    }
    s.worst_backward = worst_of(s.worst_backward, rec.backward_error);
    s.backward_off += !(rec.backward_error <= kGradTol);
    if (rec.moved[1]) ++s.factors1[rec.factor[1]];
    s.backoffs += next(0) < rec.scale_loss[0] || next(1) < rec.scale_loss[1];
    s.growths += next(0) > rec.scale_loss[0];
  }
  const auto missing = static_cast<int>(kSteps) - static_cast<int>(run.steps.size());  // a scaler raised
  s.backward_off += missing;
  for (int k = 0; k < 2; ++k) s.grad_off[k] += missing;
  return s;
}

std::string loop_name(Loop loop) {
  return loop == Loop::Recipe       ? "step o0, o1; update"
         : loop == Loop::UpdateEach ? "step o0; update; step o1; update"
                                    : "a scaler each: step, update";
}

std::string factors_text(const Summary& s) {
  if (s.factors1.size() == 1 && std::isnan(s.factors1.begin()->first)) return "- (two scales mixed)";
  std::string out;
  for (auto it = s.factors1.rbegin(); it != s.factors1.rend(); ++it)
    out += fmt::format("{}{:.4g}x: {}", out.empty() ? "" : ", ", it->first, it->second);
  out += s.factors1.size() == 1 && s.factors1.begin()->second == 1 ? " step" : " steps";
  return out;
}

// The most mantissa bits a gradient backward() sent into a weight carried, over the three loops.
int forward_grad_bits(const Result& m) {
  return std::max({m.main.grad_bits, m.update_each.grad_bits, m.per_scaler.grad_bits});
}

const char* bits_format(int bits) {
  return bits == 7 ? "bf16" : bits == 10 ? "fp16" : bits == 23 ? "fp32" : "none";
}

void report_loops(const Result& m, lab::Report& r) {
  r.section(
      fmt::format("{} SGD steps of two Linear({}, {}) models m0 and m1 (optimizers o0 and o1); both losses "
                  "reach both models",
                  m.main.steps.size(), kIn, kOut));
  r.note(
      fmt::format("an inf in model 0's gradients at step {}, in model 1's at step {}; the same batches in "
                  "every loop",
                  m.inject_at[0], m.inject_at[1]));
  r.note(fmt::format("GradScaler from {}, growth_interval {}", kInitScale, kGrowthInterval));
  auto& t = r.table("Skips, back-offs, and the worst applied gradients after the first inf vs fp32's",
                    {"loop", "skips o0, o1", "back-offs", "grad error m0, m1"});
  std::vector<std::vector<std::string>> factor_rows;
  for (const LoopRun* run : {&m.main, &m.update_each, &m.per_scaler}) {
    const Summary s = summarize(*run, m.inject_at);
    t.row({loop_name(run->loop), fmt::format("{}, {}", s.skipped[0], s.skipped[1]),
           std::to_string(s.backoffs),
           fmt::format("{}, {}", lab::sci(s.worst_after[0], 2), lab::sci(s.worst_after[1], 2))});
    factor_rows.push_back({loop_name(run->loop), factors_text(s), run->error.empty() ? "none" : run->error});
  }
  auto& f =
      r.table("Optimizer 1's applied gradients / the correctly unscaled ones", {"loop", "factor", "raised"});
  for (auto& row : factor_rows) f.row(std::move(row));
}

void report_main_steps(const Result& m, lab::Report& r) {
  r.detail_section(fmt::format("The lab's loop ({}), step by step", loop_name(m.main.loop)));
  auto& t = r.table("", {"step", "scale loss0", "scale loss1", "opt0", "opt1", "error m0", "error m1"});
  for (size_t i = 0; i < m.main.steps.size(); ++i) {
    const StepRecord& rec = m.main.steps[i];
    auto err = [&](int k) { return lab::sci(rec.error[k], 2); };
    // The step as the weights show it; "(said ...)" where the returned flag disagrees.
    auto did = [&](int k) {
      return std::string(rec.moved[k] ? "step" : "skip") + (rec.stepped[k] == rec.moved[k] ? ""
                                                            : rec.stepped[k]               ? " (said step)"
                                                                                           : " (said skip)");
    };
    t.row({std::to_string(i), lab::num(rec.scale_loss[0]), lab::num(rec.scale_loss[1]), did(0), did(1),
           err(0), err(1)});
  }
  const Summary s = summarize(m.main, m.inject_at);
  const auto at = static_cast<size_t>(m.inject_at[0]);
  const bool ran = at < m.main.steps.size();
  const double before = ran ? m.main.steps[at].scale_loss[0] : kNaN;
  const double after = !ran                           ? kNaN
                       : at + 1 < m.main.steps.size() ? m.main.steps[at + 1].scale_loss[0]
                                                      : m.main.final_scale[0];
  const auto skipped_at_inf0 = [&](int k) { return ran && !m.main.steps[at].moved[k] ? 1 : 0; };
  r.observe("inject_step", "step whose model-0 gradients got an inf", static_cast<double>(m.inject_at[0]));
  r.observe("inject_step_m1", "step whose model-1 gradients got an inf", static_cast<double>(m.inject_at[1]));
  r.observe("skipped_opt0", "at model 0's inf: steps skipped by optimizer 0", skipped_at_inf0(0));
  r.observe("skipped_opt1", "at model 0's inf: steps skipped by optimizer 1", skipped_at_inf0(1));
  r.observe("skips_total", "steps skipped by optimizer 0 + by optimizer 1 (one inf each)",
            s.skipped[0] + s.skipped[1]);
  r.observe("skips_missed", "infs whose optimizer moved its weights anyway", s.skips_missed);
  r.observe("flags_wrong", "steps whose returned flag disagrees with the weights", s.flags_wrong);
  r.observe("backoffs", "scale back-offs", s.backoffs);
  r.observe("scale_before", "scale at the inf", before, "", lab::num(before));
  r.observe("scale_after", "scale after the inf", after, "", lab::num(after));
  r.observe("growth_interval", "clean updates before the scale doubles", kGrowthInterval);
  r.observe("grad_error_after_m0", "model 0's applied gradients after the inf vs fp32 (relative)",
            s.worst_after[0], "", lab::sci(s.worst_after[0]));
  r.observe("grad_error_after_m1", "model 1's applied gradients after the inf vs fp32 (relative)",
            s.worst_after[1], "", lab::sci(s.worst_after[1]));
  r.observe("backward_error_one_scaler",
            "the lab's loop: backward()'s gradients vs scale x the lab's fp32 ones (relative, worst step)",
            s.worst_backward, "", lab::sci(s.worst_backward));
  r.observe("backward_steps_off_one_scaler", "the lab's loop: steps whose backward() gradients are off",
            s.backward_off);
  r.observe("grad_steps_off_m0", "the lab's loop: steps whose model-0 applied gradients are off",
            s.grad_off[0]);
  const int bits = forward_grad_bits(m);
  r.observe("forward_grad_bits", "mantissa bits of the gradients backward() sent into the weights, at most",
            bits, "", fmt::format("{} ({})", bits, bits_format(bits)));
}

double factor_at(const LoopRun& run, int64_t step, int k) {
  return static_cast<size_t>(step) < run.steps.size() ? run.steps[static_cast<size_t>(step)].factor[k] : 0.0;
}

void report_other_loops(const Result& m, lab::Report& r) {
  r.detail_section("The other loops");
  const Summary each = summarize(m.update_each, m.inject_at), per = summarize(m.per_scaler, m.inject_at);
  const double at_inf = factor_at(m.update_each, m.inject_at[0], 1);
  double smallest = at_inf;
  int off = 0;
  for (const auto& [f, n] : each.factors1) {
    smallest = std::min(smallest, f);
    off += f != 1.0 ? n : 0;
  }
  r.observe("two_updates_factor_inf", "update after each step: o1's factor at the inf", at_inf, "x",
            fmt::format("{:.4g}x", at_inf));
  r.observe("two_updates_factor_growth", "update after each step: o1's smallest factor", smallest, "x",
            fmt::format("{:.4g}x", smallest));
  r.observe("two_updates_steps_off", "update after each step: steps with o1's factor not 1", off);
  r.observe("two_updates_raised", "update after each step: a scaler error raised (1 = yes)",
            !m.update_each.error.empty(), "", m.update_each.error.empty() ? "no" : "yes");
  r.observe("growths_two_updates", "update after each step: scale growths", each.growths);
  r.observe("growths_main", "the lab's loop: scale growths", summarize(m.main, m.inject_at).growths);
  const double per_err = worst_of(per.worst_after[0], per.worst_after[1]);
  r.observe("per_scaler_grad_error", "a scaler each: worst applied gradients vs fp32 after the inf", per_err,
            "", lab::sci(per_err));
  // The largest ratio over the run: each scaler backs off at its own model's inf, so they part in between.
  double ratio = m.per_scaler.final_scale[1] / m.per_scaler.final_scale[0];
  for (const StepRecord& rec : m.per_scaler.steps)
    ratio = std::max(ratio, rec.scale_loss[1] / rec.scale_loss[0]);
  r.observe("per_scaler_scale_ratio", "a scaler each: largest ratio, scale of loss1 / of loss0", ratio, "x",
            fmt::format("{:.4g}x", ratio));
  r.observe("backward_error_two_scalers",
            "a scaler each: backward()'s gradients vs scale0 x fp32's of loss0 + scale1 x fp32's of loss1",
            per.worst_backward, "", lab::sci(per.worst_backward));
  r.observe("backward_steps_off_two_scalers",
            "a scaler each: steps whose backward() gradients are off (or never run: a scaler raised)",
            per.backward_off);
  const bool refused = !m.update_alone_error.empty();
  r.observe("update_alone_refused", "update() with no unscale_/step since the last one refused (1 = yes)",
            refused, "", refused ? "yes" : "no");
  r.note("that update(): amp::GradScalerError: " + (refused ? m.update_alone_error : std::string("(none)")) +
         " (as Python's GradScaler does; an unscale_ or a step in between is all it asks)");
}

// The checks of what backward() and step_recipe leave: the forward's dtype, the returned flags, each loss's
// scaled gradients (s: the recipe's loop, per: the loop with a scaler each).
void add_backward_checks(const Result& m, const Summary& s, const Summary& per, lab::Report& r) {
  // Catches a forward outside autocast (fp32's 23 bits) or under autocast to another dtype (bf16's 7): the
  // checks below compare with fp32 within 2%, which either passes. Read from the gradients themselves: 10
  // bits at seeds 0-49 (default and quick) on a 2-core AMD EPYC (family 25 model 17); an fp32 value that
  // is an fp16 one everywhere has odds of about 2^-13 per value, 64 values per weight.
  const int bits = forward_grad_bits(m);
  r.check(
      "forward-in-fp16",
      "backward()'s forward passes ran under fp16 autocast: every gradient they sent into the weights came "
      "out of an fp16 matmul (10 mantissa bits)",
      bits == 10,
      fmt::format("the gradients reaching the weights carried {} mantissa bits at most ({})", bits,
                  bits_format(bits)));
  // Catches a returned flag that is not the scaler's verdict (a constant true, a flag of the other
  // optimizer): each flag against what the step did to the weights. Flags that are always false agree with
  // weights that never move, so each optimizer must have stepped somewhere.
  const int steps = static_cast<int>(m.main.steps.size());
  const bool both_stepped = s.skipped[0] < steps && s.skipped[1] < steps;
  r.check(
      "stepped-flags-match-weights",
      "step_recipe's returned flags say what each optimizer did: stepped where its weights moved, skipped "
      "where they did not, and each stepped",
      s.flags_wrong == 0 && both_stepped,
      fmt::format("{} (step, optimizer) flag(s) disagree with the weights; optimizer 0 stepped {} of {}, "
                  "optimizer 1 {}",
                  s.flags_wrong, steps - s.skipped[0], steps, steps - s.skipped[1]));
  // Catches a loss back-propagated unscaled, or scaled by the other loss's scaler (the recipe passes one
  // scaler as both, so only the loop with a scaler each tells that apart): the .grad backward() leaves
  // against the lab's own fp32 gradients of each loss, times the scale that loss had to be multiplied by.
  // A scaler whose scale() backward never called raises at its step(): that loop's steps count as off.
  r.check(
      "backward-scales-each-loss",
      "backward() left scale0 x loss0's gradients + scale1 x loss1's, with one scaler and with two",
      s.backward_off == 0 && per.backward_off == 0,
      fmt::format("steps off {} (one scaler, worst {}), {} (a scaler each, worst {}{}); need <= {}",
                  s.backward_off, lab::sci(s.worst_backward), per.backward_off, lab::sci(per.worst_backward),
                  m.per_scaler.error.empty() ? "" : "; raised: " + m.per_scaler.error,
                  lab::percent(kGradTol, 0)));
}

// The checks of the steps: an inf skips its own optimizer, update() between the steps mis-unscales, and the
// applied gradients are fp32's (s: the recipe's loop, each: the loop with update() after each step).
void add_step_checks(const Result& m, const Summary& s, const Summary& each, lab::Report& r) {
  // Catches an optimizer stepped directly (it applies the inf, or scaled gradients) and an inf that skips
  // both optimizers: an inf in each model, each must skip its own optimizer alone, and back the one scale
  // off by half.
  r.check(
      "inf-skips-its-optimizer",
      "the inf in model 0's gradients skipped optimizer 0's step only, the one in model 1's optimizer 1's, "
      "those steps alone, and each backed the scale off once, by half",
      s.skipped_only_at_inf && s.backoffs == 2 && s.halved_at_inf == 2,
      fmt::format("optimizer 0 skipped {} step(s), optimizer 1 {}; {} inf(s) stepped anyway; {} back-off(s), "
                  "{} by half at an inf (infs at steps {} and {})",
                  s.skipped[0], s.skipped[1], s.skips_missed, s.backoffs, s.halved_at_inf, m.inject_at[0],
                  m.inject_at[1]));
  // The lab's own loop, not the learner's steps (it runs the learner's backward): shows that update() between
  // the steps mis-unscales silently; it fails when backward() leaves gradients of another scale.
  const double at_inf = r.value("two_updates_factor_inf"), smallest = r.value("two_updates_factor_growth");
  r.check("two-updates-misunscale",
          "with update() after each step, optimizer 1's gradients were applied silently at the wrong size "
          "whenever the scale moved between the steps: exactly 2x after the back-off, 0.5x after a growth",
          m.update_each.error.empty() && at_inf == 2.0 && smallest == 0.5,
          fmt::format("no error: {}; factors {}", m.update_each.error.empty() ? "yes" : "no",
                      factors_text(each)));
  // Catches update() between the steps, an optimizer stepped directly, a loss unscaled: the applied
  // gradients (the weights' change / lr) at every step against the lab's fp32 ones; NaN fails.
  r.check("unscaled-grads-match-fp32", "at every step, both models' applied gradients equal fp32's",
          s.worst[0] <= kGradTol && s.worst[1] <= kGradTol,
          fmt::format("worst relative error {} (model 0), {} (model 1); need <= {}", lab::sci(s.worst[0]),
                      lab::sci(s.worst[1]), lab::percent(kGradTol, 0)));
}

void add_checks(const Result& m, lab::Report& r) {
  const Summary s = summarize(m.main, m.inject_at), each = summarize(m.update_each, m.inject_at),
                per = summarize(m.per_scaler, m.inject_at);
  add_backward_checks(m, s, per, r);
  add_step_checks(m, s, each, r);
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 weights, fp16 autocast, fp32 reference gradients");
  r.note("fp16, the type a GradScaler exists for (the lab refuses --dtype)");
  if (m.ctx.flip)
    r.note("FLIP: the lab's loop gives each optimizer its own scaler, each loss \"its\" scaler");
  report_loops(m, r);
  report_main_steps(m, r);
  report_other_loops(m, r);
  r.takeaway(
      "One scaler serves every loss and optimizer: scale each loss with it, give each optimizer its own "
      "step() (an inf skips only the optimizer whose gradients hold it), and call update() once, after the "
      "last step. Between two update() calls the scale may move, and any optimizer stepped after that "
      "divides gradients made with the old scale by the new one.");
  add_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
