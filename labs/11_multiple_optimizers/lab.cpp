// Lab 11: several models, losses and optimizers with one GradScaler (PyTorch's AMP examples, "Working with
// multiple models, losses, and optimizers"; Q11). The AMP code is in amp.cpp.
//
// Two models read the same input; two losses mix both outputs (loss0 = mse(2 out0 + 3 out1), loss1 =
// mse(3 out0 - 5 out1)), so each loss sends gradients into both models. The recipe scales each loss with
// the one scaler, gives each optimizer its own scaler.step(), and calls update() once per step of training.
// At one step the lab writes an inf into model 0's gradients, as an overflow would, and runs three loops
// on the same data: the recipe; update() after each optimizer's step (Python accepts it); and a scaler per
// optimizer. For each it records which optimizer skipped, how the scale backed off and grew, the factor
// between the gradients each optimizer applied and the correctly unscaled ones, and how far the applied
// gradients are from fp32's.
//
// Run:  build/bin/lab11_multiple_optimizers [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16 whatever --dtype says: the type a GradScaler exists for)
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
#include <torch/torch.h>

#include "amp.h"
#include "amp/grad_scaler.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

constexpr int64_t kIn = 16, kOut = 4;   // each model: one Linear layer
constexpr int64_t kBatch = 32;          // a fresh batch every step
constexpr int64_t kSteps = 12;          // SGD steps per loop, an inf written in at step kSteps / 3
constexpr double kLr = 0.01;            // SGD learning rate, both optimizers
constexpr double kInitScale = 1024;     // low enough that nothing overflows by itself, even grown 16x
constexpr int64_t kGrowthInterval = 4;  // the scale doubles after 4 clean updates (PyTorch: 2000)
constexpr double kGradTol = 0.02;       // unscaled fp16 gradients within 2% (relative norm) of fp32's

using namespace lab11;

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
  double scale_loss[2];  // the scale each loss was multiplied by
  Stepped stepped;
  double factor[2] = {1, 1};  // applied gradients / correctly unscaled ones, per optimizer (one scaler only)
  double error[2] = {0, 0};   // applied gradients vs fp32's, relative; 0 where the optimizer skipped
};

struct LoopRun {
  Loop loop;
  std::vector<StepRecord> steps;
  double final_scale[2] = {0, 0};
  std::string error;  // what a scaler raised, if anything
};

struct Result {
  lab::Context ctx;
  int64_t inject_at = 0;
  LoopRun main, update_each, per_scaler;  // main: the recipe (--flip: a scaler per optimizer)
  std::string update_alone_error;         // update() with no unscale_/step since the last one
};

torch::Tensor flat_grads(const torch::nn::Linear& m) {
  return torch::cat({m->weight.grad().detach().flatten(), m->bias.grad().detach().flatten()})
      .to(torch::kDouble);
}

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

// fp32 gradients of loss0 + loss1 for both models at their current weights (no autocast, no scaler).
std::array<torch::Tensor, 2> fp32_grads(const torch::nn::Linear& m0, const torch::nn::Linear& m1,
                                        const torch::Tensor& x, const torch::Tensor& y) {
  auto a = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m0->clone());
  auto b = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m1->clone());
  const auto out0 = a->forward(x), out1 = b->forward(x);
  (torch::mse_loss(2 * out0 + 3 * out1, y) + torch::mse_loss(3 * out0 - 5 * out1, y)).backward();
  return {flat_grads(torch::nn::Linear(a)), flat_grads(torch::nn::Linear(b))};
}

// The ratio applied / correct over the nonzero entries, when it is one number; NaN when it varies.
double factor_of(const torch::Tensor& applied, const torch::Tensor& correct) {
  const auto nz = correct != 0;
  const auto ratio = applied.masked_select(nz) / correct.masked_select(nz);
  const double lo = ratio.min().item<double>(), hi = ratio.max().item<double>();
  return lo == hi ? lo : std::numeric_limits<double>::quiet_NaN();
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
  torch::manual_seed(r.ctx.seed + 1);  // the same batches for every loop
  for (int64_t step = 0; step < steps; ++step) {
    const auto x = torch::randn({kBatch, kIn}, torch::device(dev));
    const auto y = torch::matmul(x, teacher.t());
    const auto ref = fp32_grads(m0, m1, x, y);
    StepRecord rec{.scale_loss = {scaler0.get_scale(), s1.get_scale()}};
    o0.zero_grad();
    o1.zero_grad();
    backward(m0, m1, scaler0, s1, x, y);
    if (step == r.inject_at) m0->weight.mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    const torch::Tensor before[2] = {flat_grads(m0), flat_grads(m1)};  // scaled, as backward left them
    try {
      rec.stepped = loop == Loop::Recipe       ? step_recipe(o0, o1, scaler0)
                    : loop == Loop::UpdateEach ? step_update_each(o0, o1, scaler0)
                                               : step_per_scaler(o0, o1, scaler0, scaler1);
    } catch (const amp::GradScalerError& e) {
      run.error = e.what();
      break;
    }
    const torch::Tensor after[2] = {flat_grads(m0), flat_grads(m1)};  // unscaled in place by step()
    for (int k = 0; k < 2; ++k) {
      if (!rec.stepped[k]) continue;
      // A scaler per optimizer mixes two scales in one .grad: no single correct factor to compare with.
      rec.factor[k] = loop == Loop::PerScaler ? std::numeric_limits<double>::quiet_NaN()
                                              : factor_of(after[k], before[k] / rec.scale_loss[k]);
      rec.error[k] = rel(after[k], ref[k]);
    }
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
  Result r{.ctx = ctx, .inject_at = steps / 3};
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
  int skipped[2] = {0, 0}, backoffs = 0, growths = 0;
  double worst_after[2] = {0, 0};      // applied gradients vs fp32's, after the inf
  std::map<double, int> factors1;      // optimizer 1's factors: how many steps each
  bool skipped_only_at_inject = true;  // optimizer 0 skipped at the inf step, and nowhere else
};

Summary summarize(const LoopRun& run, int64_t inject_at) {
  Summary s;
  for (size_t i = 0; i < run.steps.size(); ++i) {
    const StepRecord& rec = run.steps[i];
    const bool at_inject = static_cast<int64_t>(i) == inject_at;
    for (int k = 0; k < 2; ++k) {
      s.skipped[k] += !rec.stepped[k];
      if (static_cast<int64_t>(i) > inject_at) s.worst_after[k] = std::max(s.worst_after[k], rec.error[k]);
    }
    s.skipped_only_at_inject &= rec.stepped[0] == !at_inject && rec.stepped[1];
    if (rec.stepped[1]) ++s.factors1[rec.factor[1]];
    const double next = i + 1 < run.steps.size() ? run.steps[i + 1].scale_loss[0] : run.final_scale[0];
    s.backoffs += next < rec.scale_loss[0];
    s.growths += next > rec.scale_loss[0];
  }
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

void report_loops(const Result& m, lab::Report& r) {
  r.section(
      fmt::format("{} SGD steps of two Linear({}, {}) models m0 and m1 (optimizers o0 and o1); both losses "
                  "reach both models",
                  m.main.steps.size(), kIn, kOut));
  r.note(
      fmt::format("an inf in model 0's gradients at step {}; the same batches in every loop", m.inject_at));
  r.note(fmt::format("GradScaler from {}, growth_interval {}", kInitScale, kGrowthInterval));
  auto& t = r.table("Skips, back-offs, and the worst applied gradients after the inf vs fp32's",
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
    auto err = [&](int k) { return rec.stepped[k] ? lab::sci(rec.error[k], 2) : std::string("(inf)"); };
    t.row({std::to_string(i), lab::num(rec.scale_loss[0]), lab::num(rec.scale_loss[1]),
           rec.stepped[0] ? "step" : "skip", rec.stepped[1] ? "step" : "skip", err(0), err(1)});
  }
  const Summary s = summarize(m.main, m.inject_at);
  const auto at = static_cast<size_t>(m.inject_at);
  const double before = m.main.steps[at].scale_loss[0];
  const double after =
      at + 1 < m.main.steps.size() ? m.main.steps[at + 1].scale_loss[0] : m.main.final_scale[0];
  r.observe("inject_step", "step whose model-0 gradients got an inf", static_cast<double>(m.inject_at));
  r.observe("skipped_opt0", "steps skipped by optimizer 0", s.skipped[0]);
  r.observe("skipped_opt1", "steps skipped by optimizer 1", s.skipped[1]);
  r.observe("backoffs", "scale back-offs", s.backoffs);
  r.observe("scale_before", "scale at the inf", before, "", lab::num(before));
  r.observe("scale_after", "scale after the inf", after, "", lab::num(after));
  r.observe("growth_interval", "clean updates before the scale doubles", kGrowthInterval);
  r.observe("grad_error_after_m0", "model 0's applied gradients after the inf vs fp32 (relative)",
            s.worst_after[0], "", lab::sci(s.worst_after[0]));
  r.observe("grad_error_after_m1", "model 1's applied gradients after the inf vs fp32 (relative)",
            s.worst_after[1], "", lab::sci(s.worst_after[1]));
}

double factor_at(const LoopRun& run, int64_t step, int k) {
  return static_cast<size_t>(step) < run.steps.size() ? run.steps[static_cast<size_t>(step)].factor[k] : 0.0;
}

void report_other_loops(const Result& m, lab::Report& r) {
  r.detail_section("The other loops");
  const Summary each = summarize(m.update_each, m.inject_at), per = summarize(m.per_scaler, m.inject_at);
  const double at_inf = factor_at(m.update_each, m.inject_at, 1);
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
  const double per_err = std::max(per.worst_after[0], per.worst_after[1]);
  r.observe("per_scaler_grad_error", "a scaler each: worst applied gradients vs fp32 after the inf", per_err,
            "", lab::sci(per_err));
  const double ratio = m.per_scaler.final_scale[1] / m.per_scaler.final_scale[0];
  r.observe("per_scaler_scale_ratio", "a scaler each: final scale of loss1 / of loss0", ratio, "x",
            fmt::format("{:.4g}x", ratio));
  const bool refused = !m.update_alone_error.empty();
  r.observe("update_alone_refused", "update() with no unscale_/step since the last one refused (1 = yes)",
            refused, "", refused ? "yes" : "no");
  r.note("that update(): amp::GradScalerError: " + (refused ? m.update_alone_error : std::string("(none)")) +
         " (as Python's GradScaler does; an unscale_ or a step in between is all it asks)");
}

void add_checks(const Result& m, lab::Report& r) {
  const Summary s = summarize(m.main, m.inject_at), each = summarize(m.update_each, m.inject_at);
  const double before = r.value("scale_before"), after = r.value("scale_after");
  r.check(
      "inf-skips-its-optimizer",
      "the inf in model 0's gradients skipped optimizer 0's step only, that step alone, and backed the "
      "scale off once, by half",
      s.skipped_only_at_inject && s.backoffs == 1 && after == 0.5 * before,
      fmt::format("optimizer 0 skipped {}, optimizer 1 {}; {} back-off(s); {} -> {} at step {}", s.skipped[0],
                  s.skipped[1], s.backoffs, lab::num(before), lab::num(after), m.inject_at));
  const double at_inf = r.value("two_updates_factor_inf"), smallest = r.value("two_updates_factor_growth");
  r.check("two-updates-misunscale",
          "with update() after each step, optimizer 1's gradients were applied silently at the wrong size "
          "whenever the scale moved between the steps: exactly 2x after the back-off, 0.5x after a growth",
          m.update_each.error.empty() && at_inf == 2.0 && smallest == 0.5,
          fmt::format("no error: {}; factors {}", m.update_each.error.empty() ? "yes" : "no",
                      factors_text(each)));
  r.check("unscaled-grads-match-fp32", "after the inf, both models' applied gradients still equal fp32's",
          s.worst_after[0] <= kGradTol && s.worst_after[1] <= kGradTol,
          fmt::format("worst relative error {} (model 0), {} (model 1); need <= {}",
                      lab::sci(s.worst_after[0]), lab::sci(s.worst_after[1]), lab::percent(kGradTol, 0)));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 weights, fp16 autocast, fp32 reference gradients");
  r.note(fmt::format("fp16 whatever --dtype says{}: the type a GradScaler exists for",
                     m.ctx.dtype_given && m.ctx.dtype != torch::kHalf ? " (bf16 asked for, fp16 used)" : ""));
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
