// Lab 09: gradient accumulation with a GradScaler (PyTorch's AMP examples, "Gradient accumulation"; Q9).
// The AMP code is in amp.cpp.
//
// A batch of 64 samples is split into 4 micro-batches. Each micro-batch's loss is divided by 4, scaled and
// back-propagated, so .grad sums scaled gradients; unscale_, step and update run once, after the last one.
// The lab compares that update of the weights with one SGD step on the whole batch (fp32, and fp16
// autocast, each against float64), runs the other orders the question offers on the same batch (update()
// after every micro-batch, which update() allows only after an unscale_ or a step), then trains with a
// scale that moves (it starts too high, backs off, grows every 2 clean steps) and compares every applied
// update with the fp32 whole-batch step at the same weights.
//
// Run:  build/bin/lab09_gradient_accumulation [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16: the type a GradScaler exists for; the lab refuses --dtype)
// --flip: the lab's own loop steps and updates after every micro-batch (the one-batch loop, unchanged,
//         inside the accumulation loop): checks accumulated-equals-whole-fp32,
//         accumulated-within-fp16-error and moving-scale-steps-match fail.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"
#include "lab/teacher_student.h"

namespace {

using namespace lab09;  // kMicro, kMicroBatch and micro() (amp.h), accumulate (amp.cpp)

constexpr int64_t kIn = 32, kHidden = 64, kOut = 8;  // a two-layer tanh MLP regressor, its teacher alike
constexpr double kLr = 0.05;                         // SGD learning rate
constexpr double kCompareScale = 1024;               // the one-batch comparison: no overflow, no growth
constexpr double kInitScale = 1 << 24;  // training: far too high, the first steps overflow and back off
constexpr int64_t kGrowthInterval = 2;  // training: the scale doubles after 2 clean steps (PyTorch: 2000)
constexpr double kFp32Tol = 1e-5;       // fp32 accumulated vs whole batch: summation order only
constexpr double kFp16TolFactor = 3.0;  // fp16: within 3x the whole batch's own fp16 error vs float64
constexpr double kMovedFactor = 100.0;  // "moved": at least 100x fp32's summation-order difference
constexpr double kSameInBoth = 0.1;     // fp16's difference within 10% of fp32's: not fp16's doing

// ---- The reference: the ordinary step on the whole batch at once ---------------------------------------

// The step every accumulated update is compared with: here, not in amp.cpp, so the learner's file cannot
// move it.
bool whole_batch(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                 bool autocast, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    loss = torch::mse_loss(model->forward(x), y);
  }
  scaler.scale(loss).backward();
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

// ---- The other orders the question offers, run on the same batch ---------------------------------------

enum class Order {
  StepEach,     // backward, step, update after every micro-batch (--flip: the lab's own loop)
  UnscaleEach,  // backward, unscale_, update after every micro-batch; one step at the end
  UpdateEach,   // backward, update after every micro-batch (refused: no inf check since the last update)
};

// update() after every micro-batch: it needs an inf check since the last update(), from unscale_ or step.
// .grad is zeroed once, as accumulation needs. Returns the optimizer steps applied; `scales` receives the
// scale each micro-batch's loss was multiplied by. Throws amp::GradScalerError where update() refuses.
int update_each(Order order, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
                amp::GradScaler& scaler, bool autocast, const torch::Tensor& x, const torch::Tensor& y,
                std::vector<double>* scales = nullptr) {
  opt.zero_grad();
  int applied = 0;
  for (int64_t m = 0; m < kMicro; ++m) {
    torch::Tensor loss;
    {
      amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m)) / static_cast<double>(kMicro);
    }
    if (scales) scales->push_back(scaler.get_scale());
    scaler.scale(loss).backward();  // added to what .grad holds: earlier gradients, already unscaled
    if (order == Order::StepEach) applied += scaler.step(opt);  // unscales all of .grad in place, steps
    if (order == Order::UnscaleEach) scaler.unscale_(opt);      // divides all of .grad by the scale again
    scaler.update();
  }
  if (order == Order::UnscaleEach) {
    applied += scaler.step(opt);  // after update(), step() unscales .grad once more
    scaler.update();
  }
  return applied;
}

// ---- measure -----------------------------------------------------------------------------------------

struct Setup {
  torch::nn::Sequential start, teacher;
  torch::Tensor x, y;  // the compared batch
};

struct Compared {  // one loop over the compared batch, from the same start
  std::string loop;
  int steps = 0;                // optimizer steps applied; -1: refused
  double vs_whole[2] = {0, 0};  // relative difference of the update to the whole batch's: fp32, fp16 autocast
  double size_ratio = 0;        // |update| / |whole batch's update|, fp16
  int scale_changes = 0;        // changes of the scale during the batch
  std::string error;
};

struct Result {
  lab::Context ctx;
  double whole_error[2] = {0, 0};      // the whole batch's update vs float64: fp32, fp16 autocast
  std::vector<Compared> loops;         // accumulated (the lab's loop), then the orders above
  double separate_steps_vs_whole = 0;  // 4 steps with zero_grad before each: nothing mixed in .grad
  // Training with a moving scale, the lab's loop:
  int64_t batches = 0;
  std::vector<double> batch_scales;  // the scale at the start of each batch
  std::vector<double> micro_scales;  // the scale of every micro-batch (--flip: recorded by update_each)
  int skipped = 0, applied = 0;
  // The worst applied update vs the fp32 whole-batch step at the same weights (NaN if any was NaN).
  double worst_applied = 0;
  int nonfinite = 0;  // applied updates holding inf/NaN: a step the scaler should have skipped
  // Calls whose returned flag says otherwise than the weights: stepped but unmoved, or skipped but moved
  // (the compared batch's and training's calls alike).
  int flags_wrong = 0;
  // The first training batch, at 2^24: its fp16 gradients overflow, so it must leave the weights as they
  // were.
  bool first_moved = false, first_finite = true;
  double final_scale = 0;
};

using lab::copy_of;
using lab::flat;

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

// The larger of two differences, NaN if either is: std::max(worst, NaN) returns worst, so a NaN update (the
// weights sent to NaN by a step that should have been skipped) would count as perfect.
double worse(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

torch::optim::SGD make_opt(torch::nn::Sequential& m) {
  return torch::optim::SGD(m->parameters(), torch::optim::SGDOptions(kLr));
}

amp::GradScaler compare_scaler(torch::Device dev, bool enabled = true) {
  return amp::GradScaler(dev, {.init_scale = kCompareScale, .enabled = enabled});
}

// The update one loop makes to the start's weights on the compared batch.
template <class Loop>
torch::Tensor update_of(const Setup& s, torch::ScalarType dtype, Loop loop) {
  torch::nn::Sequential m = copy_of(s.start, dtype);
  auto opt = make_opt(m);
  loop(m, opt, s.x.to(dtype), s.y.to(dtype));
  return flat(m) - flat(s.start);
}

// Every loop on the compared batch, fp32 and fp16 autocast, against the whole batch's update.
void compare_loops(const Setup& s, bool flip, Result& r) {
  const torch::Device dev = s.x.device();
  const auto ref = update_of(s, torch::kDouble, [&](auto& m, auto& opt, auto x, auto y) {
    auto off = compare_scaler(dev, /*enabled=*/false);
    whole_batch(m, opt, off, false, x, y);
  });
  struct Spec {
    std::string loop;
    std::optional<Order> order;  // nullopt: the recipe (--flip: StepEach)
  };
  const std::vector<Spec> specs = {{"4x backward; unscale_, step, update", std::nullopt},
                                   {"4x (backward, step, update)", Order::StepEach},
                                   {"4x (backward, unscale_, update); step", Order::UnscaleEach},
                                   {"4x (backward, update)", Order::UpdateEach}};
  for (const Spec& spec : specs) r.loops.push_back({.loop = spec.loop});
  if (flip) r.loops[0].loop = "(flip) 4x (backward, step, update)";
  for (int i = 0; i < 2; ++i) {
    const bool ac = i == 1;
    const auto whole = update_of(s, torch::kFloat, [&](auto& m, auto& opt, auto x, auto y) {
      auto scaler = compare_scaler(dev);
      whole_batch(m, opt, scaler, ac, x, y);
    });
    r.whole_error[i] = rel(whole, ref);
    for (size_t k = 0; k < specs.size(); ++k) {
      Compared& c = r.loops[k];
      std::optional<Order> order = specs[k].order;
      if (!order && flip) order = Order::StepEach;
      // The learner's accumulate is not in the try: a GradScalerError there stops the lab with the
      // library's message (not a loop shown as "refused" whose update, never measured, reads as 0).
      try {
        std::vector<double> scales;
        const auto upd = update_of(s, torch::kFloat, [&](auto& m, auto& opt, auto x, auto y) {
          auto scaler = compare_scaler(dev);
          if (order) {
            c.steps = update_each(*order, m, opt, scaler, ac, x, y, &scales);
          } else {
            c.steps = accumulate(m, opt, scaler, ac, x, y);
            r.flags_wrong += (c.steps == 1) != !flat(m).equal(flat(s.start));  // stepped, yet not moved?
          }
        });
        c.vs_whole[i] = rel(upd, whole);
        c.size_ratio = (upd.norm() / whole.norm()).item<double>();
        c.scale_changes = 0;  // the recipe: one scale for all micro-batches, update() only at the end
        for (size_t j = 1; j < scales.size(); ++j) c.scale_changes += scales[j] != scales[j - 1];
      } catch (const amp::GradScalerError& e) {
        if (!order) throw;
        c.steps = -1;
        c.error = e.what();
      }
    }
  }
}

// Four separate steps, .grad zeroed before each: the extra steps alone, nothing mixed in .grad. Returns their
// update's relative difference to the whole batch's (fp32).
double separate_steps(const Setup& s) {
  const torch::Device dev = s.x.device();
  const auto whole = update_of(s, torch::kFloat, [&](auto& m, auto& opt, auto x, auto y) {
    auto scaler = compare_scaler(dev);
    whole_batch(m, opt, scaler, /*autocast=*/false, x, y);
  });
  const auto four = update_of(s, torch::kFloat, [&](auto& m, auto& opt, auto x, auto y) {
    auto scaler = compare_scaler(dev);
    for (int64_t k = 0; k < kMicro; ++k) {
      opt.zero_grad();
      scaler.scale(torch::mse_loss(m->forward(micro(x, k)), micro(y, k)) / double(kMicro)).backward();
      scaler.step(opt);
      scaler.update();
    }
  });
  return rel(four, whole);
}

// The fp32 whole-batch SGD step at the model's current weights (no scaler: the reference).
torch::Tensor fp32_step(const torch::nn::Sequential& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::nn::Sequential m = copy_of(model);
  auto opt = make_opt(m);
  auto off = compare_scaler(x.device(), /*enabled=*/false);
  const auto before = flat(m);
  whole_batch(m, opt, off, false, x, y);
  return flat(m) - before;
}

// Training with a scale that moves between batches: the lab's loop (--flip: update after every micro-batch).
void train(Setup& s, bool flip, Result& r) {
  torch::nn::Sequential model = copy_of(s.start);
  auto opt = make_opt(model);
  amp::GradScaler scaler(s.x.device(), {.init_scale = kInitScale, .growth_interval = kGrowthInterval});
  for (int64_t b = 0; b < r.batches; ++b) {
    const auto x = torch::randn({kMicro * kMicroBatch, kIn}, s.x.options());
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      y = s.teacher->forward(x);
    }
    const auto ref = fp32_step(model, x, y), before = flat(model);
    r.batch_scales.push_back(scaler.get_scale());
    bool stepped = false;
    if (flip) {
      stepped =
          update_each(Order::StepEach, model, opt, scaler, /*autocast=*/true, x, y, &r.micro_scales) > 0;
    } else {
      r.micro_scales.insert(r.micro_scales.end(), kMicro, scaler.get_scale());
      stepped = accumulate(model, opt, scaler, /*autocast=*/true, x, y);
    }
    const auto upd = flat(model) - before;
    const bool moved = !(upd.abs().max().item<double>() == 0);  // a NaN update moved the weights
    r.flags_wrong += stepped != moved;
    if (b == 0) {
      r.first_moved = moved;
      r.first_finite = upd.isfinite().all().item<bool>();
    }
    if (!moved) {
      ++r.skipped;
      continue;
    }
    ++r.applied;
    r.nonfinite += !upd.isfinite().all().item<bool>();
    r.worst_applied = worse(r.worst_applied, rel(upd, ref));
  }
  r.final_scale = scaler.get_scale();
}

Result measure(const lab::Context& ctx) {
  Result r{.ctx = ctx, .batches = ctx.size(24, 48, 12)};
  const lab::TeacherStudent d =
      lab::draw_teacher_student(ctx.device, kIn, kHidden, kOut, {kMicro * kMicroBatch, kIn});
  Setup s{.start = lab::mlp_with(d.start), .teacher = lab::mlp_with(d.teacher), .x = d.x};
  {
    torch::NoGradGuard no_grad;
    s.y = s.teacher->forward(s.x);
  }
  compare_loops(s, ctx.flip, r);
  r.separate_steps_vs_whole = separate_steps(s);
  train(s, ctx.flip, r);
  return r;
}

// ---- report ------------------------------------------------------------------------------------------

int changes(const std::vector<double>& v, size_t stride, bool inside) {
  int n = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] != v[i - 1] && ((i % stride != 0) == inside)) ++n;
  return n;
}

std::string cell(double v) {
  return lab::sci(v, 2);
}

void report_compared(const Result& m, lab::Report& r) {
  r.section(fmt::format("One batch of {} = {} micro-batches of {}, SGD from the same start, scale {}",
                        kMicro * kMicroBatch, kMicro, kMicroBatch, lab::num(kCompareScale)));
  auto& t = r.table("", {"loop over the micro-batches", "steps", "fp32 vs whole", "fp16 vs whole"});
  t.row({fmt::format("the whole batch of {}", kMicro * kMicroBatch), "1", "-", "-"});
  int scale_changes = 0;
  for (const Compared& c : m.loops) {
    if (c.steps < 0) {
      t.row({c.loop, "-", "refused", "refused"});
      continue;
    }
    scale_changes += c.scale_changes;
    t.row({c.loop, std::to_string(c.steps), cell(c.vs_whole[0]), cell(c.vs_whole[1])});
  }
  r.note(fmt::format("the whole batch vs float64: fp32 {}, fp16 autocast {}", cell(m.whole_error[0]),
                     cell(m.whole_error[1])));
  r.note(fmt::format("scale changes during the batch, all loops: {}", scale_changes));
  for (const Compared& c : m.loops)
    if (c.steps < 0) r.note("refused: amp::GradScalerError: " + c.error);
}

void report_training(const Result& m, lab::Report& r) {
  r.section(
      fmt::format("{} batches of {} micro-batches in fp16, GradScaler from 2^{:.0f}, growth_interval {}",
                  m.batches, kMicro, std::log2(kInitScale), kGrowthInterval));
  r.chart(lab::sparkline("the scale at the start of each batch (log2)", m.batch_scales, /*log2_scale=*/true));
  r.observe("skipped_steps", "batches skipped (inf/NaN gradients)", m.skipped);
  r.observe("scale_changes_at_boundaries", "scale changes between batches",
            changes(m.micro_scales, kMicro, /*inside=*/false));
  r.observe("moving_scale_worst", "worst applied update vs fp32's whole-batch step", m.worst_applied, "",
            lab::sci(m.worst_applied));
  r.observe("applied_batches", "batches applied", m.applied);
}

// The checks of the one compared batch: each loop's update against the whole batch's.
void add_batch_checks(const Result& m, lab::Report& r) {
  const Compared &acc = m.loops[0], &each = m.loops[1];
  r.check(
      "accumulated-equals-whole-fp32",
      "in fp32, the accumulated micro-batches give the whole batch's update, to summation order",
      acc.vs_whole[0] <= kFp32Tol,
      fmt::format("relative difference {} (need <= {})", lab::sci(acc.vs_whole[0]), lab::sci(kFp32Tol, 1)));
  r.check("accumulated-within-fp16-error",
          "under fp16 autocast, the accumulated update is within the whole batch's own fp16 error",
          acc.vs_whole[1] <= kFp16TolFactor * m.whole_error[1],
          fmt::format("{} from the whole batch's, which is {} from float64 (need <= {}x that)",
                      lab::sci(acc.vs_whole[1]), lab::sci(m.whole_error[1]), kFp16TolFactor));
  const double both = each.vs_whole[1] / each.vs_whole[0];
  // Fails on a loop that steps less often than it updates, or whose fp16 update moves for another reason
  // than the extra steps (a scale that changed inside the batch, gradients unscaled twice): fp32, with no
  // scaler, must move it as much. The scale's changes are shown, not checked: with a scale of 1024 and a
  // growth interval of 2000 nothing can change it in 4 steps.
  r.check(
      "update-each-not-the-scale",
      "update() after every micro-batch, with the step it needs, takes 4 steps and moves the update as "
      "much in fp32 as in fp16",
      each.steps == kMicro && each.vs_whole[0] >= kMovedFactor * kFp32Tol &&
          std::abs(both - 1) <= kSameInBoth,
      fmt::format("{} steps; {} (fp32) and {} (fp16) from the whole batch's update, {:.3f}x (need >= {} "
                  "and within {}); {} scale changes (shown)",
                  each.steps, lab::sci(each.vs_whole[0]), lab::sci(each.vs_whole[1]), both,
                  lab::sci(kMovedFactor * kFp32Tol, 1), lab::percent(kSameInBoth, 0), each.scale_changes));
}

// The checks of the training run, whose scale moved between batches: the steps applied and skipped.
void add_training_checks(const Result& m, lab::Report& r) {
  // Fails on a step that bypasses the scaler's skip (the overflowed batches' inf/NaN applied: non-finite
  // updates, worst NaN), on .grad never zeroed (an inf kept from a skipped batch skips every later one: none
  // applied), and on updates that are not the whole batch's. NaN fails: `<=` is false for it.
  r.check("moving-scale-steps-match",
          "while the scale moved between batches, every applied update was the fp32 whole-batch step at the "
          "same weights, to fp16 rounding",
          m.applied > 0 && m.nonfinite == 0 && m.worst_applied <= kFp16TolFactor * m.whole_error[1],
          fmt::format("worst {} over {} applied batches ({} non-finite), {} skipped{} (need <= {}x the whole "
                      "batch's fp16 error, {})",
                      lab::sci(m.worst_applied), m.applied, m.nonfinite, m.skipped,
                      m.applied == 0 && m.final_scale < kInitScale
                          ? ", every batch skipped, the scale backing off each time"
                          : "",
                      kFp16TolFactor, lab::sci(m.whole_error[1])),
          {{"applied", m.applied},
           {"nonfinite", m.nonfinite},
           {"skipped", m.skipped},
           {"scale_backed_off", m.final_scale < kInitScale}});
  // Fails on a forward that is not fp16 (autocast off, or bf16: at 2^24 their gradients do not overflow, so
  // the batch is applied) and on a step taken past the skip (the weights sent to inf/NaN). A skip is one
  // only where other batches step: an accumulate that never steps fails too.
  r.check(
      "first-batch-overflows",
      fmt::format("at the initial scale 2^{:.0f} the first batch's fp16 gradients overflow and its step is "
                  "skipped, while later batches are applied",
                  std::log2(kInitScale)),
      !m.first_moved && m.applied > 0,
      fmt::format("the first batch: {}; {} later batches applied",
                  !m.first_moved   ? "weights unchanged (skipped)"
                  : m.first_finite ? "applied with finite gradients"
                                   : "applied, weights moved to inf/NaN",
                  m.applied),
      {{"first_moved", m.first_moved}, {"first_finite", m.first_finite}, {"applied", m.applied}});
  // Fails on a returned flag that is not what the step did (true whatever scaler.step() returned, or
  // false for a step taken): the compared batch's two calls and every training batch. A flag that is
  // always false agrees with weights that never move, so some batch must be applied.
  r.check("stepped-flag-matches", "accumulate returned true exactly when the weights moved, and some did",
          m.flags_wrong == 0 && m.applied > 0,
          fmt::format("{} of {} calls returned a flag the weights contradict; {} batches applied",
                      m.flags_wrong, 2 + m.batches, m.applied));
}

void add_checks(const Result& m, lab::Report& r) {
  add_batch_checks(m, r);
  add_training_checks(m, r);
}

void report_details(const Result& m, lab::Report& r) {
  const Compared &acc = m.loops[0], &step_each = m.loops[1], &unscale_each = m.loops[2];
  r.detail_section("What the loops did");
  r.observe("micro_batches", "micro-batches per optimizer step", kMicro);
  r.observe("accum_vs_whole_fp32", "fp32: accumulated update vs the whole batch's (relative)",
            acc.vs_whole[0], "", lab::sci(acc.vs_whole[0]));
  r.observe("accum_vs_whole_fp16", "fp16: accumulated update vs the whole batch's (relative)",
            acc.vs_whole[1], "", lab::sci(acc.vs_whole[1]));
  r.observe("whole_error_fp16", "fp16: the whole batch's update vs float64 (relative)", m.whole_error[1], "",
            lab::sci(m.whole_error[1]));
  r.observe("each_step_steps", "per-micro-batch step+update: optimizer steps", step_each.steps);
  r.observe("each_step_vs_whole_fp32", "per-micro-batch step+update vs whole, fp32", step_each.vs_whole[0],
            "", lab::sci(step_each.vs_whole[0]));
  r.observe("each_step_vs_whole_fp16", "per-micro-batch step+update vs whole, fp16", step_each.vs_whole[1],
            "", lab::sci(step_each.vs_whole[1]));
  r.observe("each_step_scale_changes", "per-micro-batch step+update: scale changes", step_each.scale_changes);
  r.observe("separate_steps_vs_whole", "4 steps, .grad zeroed before each, vs whole (fp32)",
            m.separate_steps_vs_whole, "", lab::sci(m.separate_steps_vs_whole));
  r.observe("each_unscale_size", "per-micro-batch unscale_+update: |update| / whole's",
            unscale_each.size_ratio, "x", fmt::format("{}x", lab::sci(unscale_each.size_ratio)));
  const bool refused = m.loops[3].steps < 0;
  r.observe("update_alone_refused", "update() after a backward alone refused (1 = yes)", refused, "",
            refused ? "yes" : "no");
  r.observe("compare_scale", "the compared batch's scale", kCompareScale);
  r.observe("init_scale", "training: initial scale", kInitScale, "",
            fmt::format("2^{:.0f}", std::log2(kInitScale)));
  r.observe("growth_interval", "training: clean steps before the scale doubles", kGrowthInterval);
  r.observe("scale_changes_mid_batch", "training: scale changes inside a batch",
            changes(m.micro_scales, kMicro, /*inside=*/true));
  r.observe("final_scale", "training: final scale", m.final_scale, "",
            fmt::format("2^{:.0f}", std::log2(m.final_scale)));
  r.observe("nonfinite_updates", "training: applied updates holding inf/NaN", m.nonfinite);
  r.observe("flags_wrong", "calls whose returned flag the weights contradict", m.flags_wrong);
}

void report_explained(const Result& m, lab::Report& r) {
  const Compared &step_each = m.loops[1], &unscale_each = m.loops[2];
  r.note(fmt::format(
      "4x (backward, step, update): update() needs an inf check since the last update(), so every "
      "micro-batch steps: {} optimizer steps, each on one micro-batch's share of the loss, at weights the "
      "steps before "
      "had moved. With .grad zeroed before each (nothing mixed) the update is {} from the whole batch's; "
      "accumulated in .grad, whose earlier gradients step() had unscaled in place and the next step() "
      "divides again, {}. The scale did not move ({} changes) and fp32 and fp16 differ alike: the extra "
      "steps do it.",
      step_each.steps, lab::sci(m.separate_steps_vs_whole), lab::sci(step_each.vs_whole[0]),
      step_each.scale_changes));
  r.note(fmt::format(
      "4x (backward, unscale_, update); step: every unscale_ divides all of .grad by the scale, the "
      "earlier micro-batches' gradients (unscaled already) included, and step() after update() unscales "
      "once more: the update applied was {}x the whole batch's.",
      lab::sci(unscale_each.size_ratio)));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp16 autocast, fp32 weights, float64 reference");
  r.note("fp16, the type a GradScaler exists for (the lab refuses --dtype)");
  if (m.ctx.flip) r.note("FLIP: the lab's loop runs backward, step and update after every micro-batch");
  report_compared(m, r);
  report_training(m, r);
  report_details(m, r);
  report_explained(m, r);
  r.takeaway(
      "Divide each micro-batch's loss by their number, scale it and back-propagate it, and call unscale_ "
      "(if you clip), step and update once, after the last micro-batch: .grad then sums gradients that all "
      "carry the same scale, one unscale_ divides them once, and the optimizer takes one step.");
  add_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
