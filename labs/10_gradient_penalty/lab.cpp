// Lab 10: a gradient penalty with a GradScaler (PyTorch's AMP examples, "Gradient penalty"; Q10). The AMP
// code is in amp.cpp.
//
// The penalty is the L2 norm of the loss's gradients with respect to the weights, added to the loss.
// torch::autograd::grad of the *scaled* loss returns scaled gradients, so the recipe multiplies them by
// 1/scale, computes the penalty with autocast on, then scales loss + penalty for backward. The lab computes
// the penalty at step 0 from the same weights and batch with its own plain step (reference_step, judge.cpp)
// in float64 and fp32, and with penalty_step (amp.cpp) under fp16 autocast and in fp32, compares the update
// each step makes (the gradients the optimizer received) with the lab's float64 one, tries the question's
// other answers (update() before the penalty, a cast to fp16), runs one step at a scale that overflows fp16
// (it must be skipped), one step on a batch whose gradients fp16 loses without a scale (output layer and
// targets times 1e-4; these two crafted steps are judge.cpp's), then trains with the penalty in each.
//
// Run:  build/bin/lab10_gradient_penalty [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16: the type a GradScaler exists for; the lab refuses --dtype)
// --flip: the fp16 run steps with penalty_step_scaled_grads (below), amp.cpp's step without the multiply by
//         1/scale: the penalty comes from the scaled gradients. Checks penalty-matches-fp64,
//         penalty-gradients-match-fp64, training-matches-fp32, small-gradients-penalty and
//         overflow-step-skipped (its fp16 training no longer ends near fp32's loss) fail.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"
#include "lab/teacher_student.h"

namespace {

constexpr int64_t kIn = 16, kHidden = 32, kOut = 4;  // a two-layer tanh MLP regressor, its teacher alike
constexpr int64_t kBatch = 64;                       // one fixed batch
constexpr double kLr = 0.02;                         // SGD learning rate
constexpr double kInitScale = 1024;    // 2^10: step 0 does not overflow, so its penalty can be compared
constexpr double kPenaltyTol = 0.01;   // the fp16-autocast run's penalty within 1% of float64's
constexpr double kGradTol = 0.01;      // the optimizer's gradients within 1% (relative norm) of float64's
constexpr double kTrainTol = 0.05;     // fp16 final loss within 5% of fp32's
constexpr double kTinyTol = 0.10;      // its penalty within 10% of float64's (outputs rounded in fp16)
constexpr double kTinyLostMin = 0.50;  // unscaled, the lab's own fp16 penalty is off by 50% or more

using namespace lab10;
// The problem and the measures the judge (judge.cpp) shares, and the sizes of its crafted steps.
using judge::kOverflowScale, judge::kTinyFactor, judge::kTinyResidual, judge::kTinyScale;
using judge::Setup, judge::copy_of, judge::flat, judge::norm_of;

// ---- The reference: the lab's own step (judge.cpp) -----------------------------------------------------

// reference_step as a Run's step (the scaler, disabled, and autocast, off, are not used).
Step lab_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler&, bool,
              const torch::Tensor& x, const torch::Tensor& y) {
  return judge::reference_step(model, opt, /*with_penalty=*/true, x, y);
}

// ---- --flip ----------------------------------------------------------------------------------------------

// penalty_step (amp.cpp) with the multiply by 1/scale left out: the penalty of the scaled gradients.
Step penalty_step_scaled_grads(torch::nn::Sequential& model, torch::optim::Optimizer& opt,
                               amp::GradScaler& scaler, bool autocast, const torch::Tensor& x,
                               const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    loss = torch::mse_loss(model->forward(x), y);
  }
  const auto scaled = torch::autograd::grad({scaler.scale(loss)}, model->parameters(), /*grad_outputs=*/{},
                                            /*retain_graph=*/true, /*create_graph=*/true);
  torch::Tensor penalty;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    torch::Tensor sum_sq = torch::zeros({}, loss.options());
    for (const auto& g : scaled) sum_sq = sum_sq + g.pow(2).sum();
    penalty = sum_sq.sqrt();
  }
  scaler.scale(loss + penalty).backward();
  const bool stepped = scaler.step(opt);
  scaler.update();
  return {loss.item<double>(), penalty.item<double>(), stepped};
}

// ---- measure -----------------------------------------------------------------------------------------

struct Run {
  std::string name;
  torch::ScalarType dtype;                      // of the weights and data
  bool fp16 = false;                            // autocast and an enabled scaler
  decltype(&penalty_step) step = penalty_step;  // the lab's (lab_step) or amp.cpp's; --flip: fp16's is
                                                // penalty_step_scaled_grads
  Step first, last;
  // What step 0 did to the weights (after - before, float64): SGD's -lr x the gradients the optimizer
  // received, read from the weights, not from the .grad the step leaves behind (it may zero it).
  torch::Tensor first_update;
  double final_loss = 0;  // the lab's own loss of the final weights (not the step's returned one)
  int skipped = 0;
  int flags_wrong = 0;  // steps whose returned flag the weights contradict (stepped, unmoved, or the reverse)
  double final_scale = 1;
};

struct Result {
  lab::Context ctx;
  int64_t steps = 0;
  std::vector<Run> runs;            // float64 and fp32 (the lab's step), fp32 and fp16 (penalty_step)
  torch::Tensor loss_only_update;   // float64, step 0: the update of the loss alone, no penalty
  judge::OverflowStep overflow;     // penalty_step at a scale that overflows fp16, one step (judge.cpp)
  double returned_penalty = 0;      // fp16: the norm of the gradients as autograd::grad returned them
  double fp16_cast_penalty = 0;     // ... cast to fp16 and squared there
  std::string update_error;         // update() right after autograd::grad
  bool returned_unchanged = false;  // the returned gradients, bitwise, after an update() that ran
  double scale_after_update = 0;    // the scale that update() set
  // The dtypes the recipe's penalty is computed in under fp16 autocast: autograd::grad's gradients are the
  // fp32 weights' dtype, and pow, sum and sqrt are on no list that casts to fp16, so its arithmetic is fp32.
  torch::ScalarType grad_dtype = torch::kFloat, penalty_dtype = torch::kFloat;
  judge::TinyStep tiny;  // one step on the small-gradient batch against the lab's float64 step (judge.cpp)
};

void train(const Setup& s, int64_t steps, Run& run) {
  torch::nn::Sequential m = copy_of(s.start, run.dtype);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler(s.x.device(), {.init_scale = kInitScale, .enabled = run.fp16});
  const auto x = s.x.to(run.dtype), y = s.y.to(run.dtype);
  for (int64_t i = 0; i < steps; ++i) {
    const torch::Tensor before = flat(m);
    const Step st = run.step(m, opt, scaler, run.fp16, x, y);
    const torch::Tensor update = flat(m) - before;
    const bool moved = !(update.abs().max().item<double>() == 0);  // a NaN update moved the weights
    if (i == 0) {
      run.first = st;
      run.first_update = update;
    }
    run.last = st;
    run.skipped += !st.stepped;
    run.flags_wrong += st.stepped != moved;
  }
  run.final_scale = scaler.get_scale();
  torch::NoGradGuard no_grad;
  run.final_loss = torch::mse_loss(m->forward(x), y).item<double>();
}

// The question's other answers at step 0, fp16: the gradients as autograd::grad returns them, an update()
// before the penalty, and a cast to fp16.
void other_answers(const Setup& s, Result& r) {
  torch::nn::Sequential m = copy_of(s.start);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(kLr));
  // growth_interval 1: an update() that runs after a clean unscale_ doubles the scale.
  amp::GradScaler scaler(s.x.device(), {.init_scale = kInitScale, .growth_interval = 1});
  torch::Tensor loss;
  {
    amp::Autocast ac(s.x.device(), torch::kHalf);
    loss = torch::mse_loss(m->forward(s.x), s.y);
  }
  const auto returned =
      torch::autograd::grad({scaler.scale(loss)}, m->parameters(), {}, /*retain_graph=*/true);
  std::vector<torch::Tensor> kept;
  for (const auto& g : returned) kept.push_back(g.clone());
  {
    amp::Autocast ac(s.x.device(), torch::kHalf);
    r.grad_dtype = returned[0].scalar_type();
    r.penalty_dtype = (returned[0] * (1.0 / scaler.get_scale())).pow(2).sum().sqrt().scalar_type();
  }
  r.returned_penalty = norm_of(returned, torch::kDouble);
  r.fp16_cast_penalty = norm_of(returned, torch::kHalf);
  try {
    scaler.update();  // no unscale_ or step since the scaler was made: nothing to update from
  } catch (const amp::GradScalerError& e) {
    r.update_error = e.what();
  }
  scaler.scale(loss).backward();  // fills .grad, so that unscale_ records an inf check
  scaler.unscale_(opt);
  scaler.update();  // runs now; it sets the scale for later scale() calls
  r.scale_after_update = scaler.get_scale();
  r.returned_unchanged = true;
  for (size_t i = 0; i < kept.size(); ++i) r.returned_unchanged &= torch::equal(kept[i], returned[i]);
}

Result measure(const lab::Context& ctx) {
  Result r{.ctx = ctx, .steps = ctx.size(60, 200, 20)};
  const lab::TeacherStudent d = lab::draw_teacher_student(ctx.device, kIn, kHidden, kOut, {kBatch, kIn});
  Setup s{.start = lab::mlp_with(d.start), .x = d.x};
  {
    torch::NoGradGuard no_grad;
    s.y = lab::mlp_with(d.teacher)->forward(s.x);
  }
  r.runs = {{.name = "float64, the lab's step", .dtype = torch::kDouble, .step = lab_step},
            {.name = "fp32, the lab's step", .dtype = torch::kFloat, .step = lab_step},
            {.name = ctx.flip ? "fp16, not unscaled" : "fp16 recipe",
             .dtype = torch::kFloat,
             .fp16 = true,
             .step = ctx.flip ? penalty_step_scaled_grads : penalty_step},
            {.name = "fp32, penalty_step", .dtype = torch::kFloat}};
  for (Run& run : r.runs) train(s, r.steps, run);
  r.loss_only_update = judge::loss_only_update(s, kLr);
  r.overflow = judge::overflow_step(s, r.runs[2].step, kLr);
  r.tiny = judge::tiny_step(s, r.runs[2].step, kLr);
  other_answers(s, r);
  return r;
}

// ---- report ------------------------------------------------------------------------------------------

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

std::string times(double v) {
  return std::isfinite(v) ? fmt::format("{:.4g}x", v) : "inf";
}

// A ratio near 1, to 4 decimals (times() gives 4 significant digits).
std::string ratio_text(double v) {
  return std::isfinite(v) ? fmt::format("{:.4f}x", v) : "inf/NaN";
}

// What a hint reads must be a number: JSON has no inf or NaN (the report writes null), so a non-finite ratio
// is shown as its text and stored as -1.
double finite_or_minus1(double v) {
  return std::isfinite(v) ? v : -1;
}

// Step 0 of penalty_step (fp16 and fp32) against the lab's float64 step, from the same weights and batch.
struct Step0 {
  double ratio16 = 0, ratio32 = 0;        // penalty / float64's
  double grad_err16 = 0, grad_err32 = 0;  // update vs float64's (relative): the optimizer's gradients
  double size16 = 0;                      // |fp16 update| / |float64's|
  double vs_loss_only16 = 0;              // fp16 update vs the float64 update of the loss alone (relative)
};

Step0 step0_of(const Result& m) {
  const Run &ref = m.runs[0], &f16 = m.runs[2], &f32 = m.runs[3];
  return {.ratio16 = f16.first.penalty / ref.first.penalty,
          .ratio32 = f32.first.penalty / ref.first.penalty,
          .grad_err16 = rel(f16.first_update, ref.first_update),
          .grad_err32 = rel(f32.first_update, ref.first_update),
          .size16 = (f16.first_update.norm() / ref.first_update.norm()).item<double>(),
          .vs_loss_only16 = rel(f16.first_update, m.loss_only_update)};
}

void report_step0(const Result& m, lab::Report& r) {
  const Run& ref = m.runs[0];
  r.section("Step 0's penalty ||gradients||_2 from autograd::grad, same weights and batch");
  auto& t = r.table("", {"gradients", "penalty", "vs float64"});
  t.row({"float64, no scaler", lab::sci(ref.first.penalty), "1x"});
  t.row({"fp32, no scaler", lab::sci(m.runs[1].first.penalty),
         times(m.runs[1].first.penalty / ref.first.penalty)});
  t.row({"fp16 autocast, of scaler.scale(loss)", lab::sci(m.returned_penalty),
         times(m.returned_penalty / ref.first.penalty)});
  r.observe("init_scale", "the scale at step 0", kInitScale, "", lab::num(kInitScale));
}

void report_training(const Result& m, lab::Report& r) {
  const Run &ref = m.runs[0], &f32 = m.runs[1], &f16 = m.runs[2], &mine32 = m.runs[3];
  const Step0 s0 = step0_of(m);
  r.detail_section(fmt::format("{} SGD steps with the penalty (lr {}), from the same start", m.steps, kLr));
  r.observe("penalty_ref", "penalty at step 0, float64", ref.first.penalty, "", lab::sci(ref.first.penalty));
  const double ratio_returned = m.returned_penalty / ref.first.penalty;
  r.observe("penalty_ratio_scaled_grads", "from the gradients as returned / float64", ratio_returned, "x",
            times(ratio_returned));
  auto& t = r.table("", {"run", "penalty, step 0", "final loss", "vs fp32", "skipped", "final scale"});
  for (const Run& run : m.runs)
    t.row({run.name, lab::sci(run.first.penalty), lab::sci(run.final_loss),
           fmt::format("{:.4f}x", run.final_loss / f32.final_loss), std::to_string(run.skipped),
           lab::num(run.final_scale)});
  r.observe("penalty_ratio", "fp16-autocast run's penalty / float64 penalty, step 0",
            finite_or_minus1(s0.ratio16), "x", ratio_text(s0.ratio16));
  r.observe("penalty_ratio_fp32", "penalty_step in fp32: penalty / float64 penalty, step 0",
            finite_or_minus1(s0.ratio32), "x", ratio_text(s0.ratio32));
  r.observe("penalty_dtype", "dtype the penalty is computed in under fp16 autocast",
            static_cast<double>(c10::elementSize(m.penalty_dtype) * 8), "",
            fmt::format("{} (its gradients are {}: pow, sum and sqrt are not cast to fp16)",
                        lab::short_name(m.penalty_dtype), lab::short_name(m.grad_dtype)));
  r.observe("penalty_grad_error", "fp16: the optimizer's gradients at step 0 vs float64's",
            finite_or_minus1(s0.grad_err16), "",
            f16.first.stepped ? lab::sci(s0.grad_err16) : "step 0 skipped");
  r.observe("penalty_grad_error_fp32",
            "penalty_step in fp32: the optimizer's gradients at step 0 vs float64's",
            finite_or_minus1(s0.grad_err32), "", lab::sci(s0.grad_err32));
  r.observe("update_size_fp16", "fp16: |step 0's update| / float64's", finite_or_minus1(s0.size16), "x",
            ratio_text(s0.size16));
  r.observe("update_vs_loss_only", "fp16: step 0's update vs float64's from the loss alone (no penalty)",
            finite_or_minus1(s0.vs_loss_only16), "", lab::sci(s0.vs_loss_only16));
  const double loss_ratio = f16.final_loss / f32.final_loss;
  r.observe("loss_ratio_fp16", "fp16 final loss / fp32 final loss", loss_ratio, "x",
            fmt::format("{:.4f}x", loss_ratio));
  r.observe("skipped_steps", "fp16 steps skipped", f16.skipped);
  r.observe("trained", "fp32 final loss / initial loss", f32.final_loss / f32.first.loss, "x",
            fmt::format("{:.4f}x", f32.final_loss / f32.first.loss));
  r.observe("flags_wrong", "penalty_step's returned flags the weights contradict (fp16 and fp32 training)",
            f16.flags_wrong + mine32.flags_wrong);
  r.observe("overflow_finite", "at an fp16-overflowing scale: the weights after the step finite (1 = yes)",
            m.overflow.finite, "", m.overflow.finite ? "yes" : "no");
}

void report_other_answers(const Result& m, lab::Report& r) {
  r.detail_section("The question's other answers, at step 0 in fp16");
  const bool refused = !m.update_error.empty();
  r.observe("update_refused", "update() right after autograd::grad refused (1 = yes)", refused, "",
            refused ? "yes" : "no");
  r.note("update() there: amp::GradScalerError: " + (refused ? m.update_error : std::string("(none)")));
  r.observe("update_new_scale", "the scale an update() after a backward and unscale_ set",
            m.scale_after_update);
  r.observe("returned_unchanged",
            "the returned gradients bitwise unchanged by an update() that ran (1 = yes)",
            m.returned_unchanged, "", m.returned_unchanged ? "yes" : "no");
  const bool overflowed = !std::isfinite(m.fp16_cast_penalty);
  r.observe("fp16_cast_overflow", "returned gradients cast to fp16: sum of squares inf (1 = yes)", overflowed,
            "", overflowed ? "yes" : "no");
  const double sum_sq = m.returned_penalty * m.returned_penalty;
  r.observe("scaled_sum_sq", "their sum of squares, in float64 (fp16's largest: 65504)", sum_sq, "",
            lab::sci(sum_sq));
}

void report_tiny(const Result& m, lab::Report& r) {
  r.detail_section(
      fmt::format("One step on a batch with small gradients (output layer x {:g}, targets {:g} "
                  "from its outputs)",
                  kTinyFactor, kTinyResidual));
  r.observe("tiny_unscaled_ratio",
            "fp16, autograd::grad of the unscaled loss (the lab's): penalty / float64's",
            finite_or_minus1(m.tiny.unscaled_ratio), "x", ratio_text(m.tiny.unscaled_ratio));
  r.observe("tiny_unscaled_zeroed", "... the weights' gradients that came out exactly zero",
            100 * m.tiny.zeroed, "%");
  r.observe("tiny_penalty_ratio",
            fmt::format("penalty_step at scale {}: penalty / float64's", lab::num(kTinyScale)),
            finite_or_minus1(m.tiny.ratio), "x", ratio_text(m.tiny.ratio));
  r.observe("tiny_grad_error", "... its update vs float64's (relative; not checked: fp16 rounds the outputs)",
            finite_or_minus1(m.tiny.grad_err), "", m.tiny.stepped ? lab::sci(m.tiny.grad_err) : "skipped");
}

void add_checks(const Result& m, lab::Report& r) {
  const Run &f32 = m.runs[1], &f16 = m.runs[2], &mine32 = m.runs[3];
  const Step0 s0 = step0_of(m);
  const double loss_ratio = f16.final_loss / f32.final_loss,
               mine32_ratio = mine32.final_loss / f32.final_loss;
  // Every comparison is against the lab's own float64 step (reference_step), and each `<=` is false for NaN.
  // Fails on the penalty of the scaled gradients (the scale's factor), of the unscaled loss's gradients
  // multiplied by 1/scale (1/scale), and on a norm that is not the L2 norm (penalty_step's fp32 run too).
  r.check("penalty-matches-fp64",
          "the penalty under fp16 autocast, from gradients multiplied by 1/scale, matches float64's",
          std::abs(s0.ratio16 - 1) <= kPenaltyTol && std::abs(s0.ratio32 - 1) <= kPenaltyTol,
          fmt::format("fp16 {} and fp32 {} the float64 penalty (need within {})", ratio_text(s0.ratio16),
                      ratio_text(s0.ratio32), lab::percent(kPenaltyTol, 0)));
  // Fails on a penalty that never reaches .grad (create_graph left out: the update is the loss's alone),
  // on loss + penalty back-propagated unscaled (step() divides it by the scale), on a skipped step 0.
  r.check("penalty-gradients-match-fp64",
          "the gradients of loss + penalty that the optimizer received at step 0 match float64's",
          f16.first.stepped && s0.grad_err16 <= kGradTol && s0.grad_err32 <= kGradTol,
          f16.first.stepped
              ? fmt::format("fp16 {} and fp32 {} from float64 (need <= {}); fp16 {} the size, {} from the "
                            "loss alone's",
                            lab::sci(s0.grad_err16), lab::sci(s0.grad_err32), lab::sci(kGradTol, 1),
                            ratio_text(s0.size16), lab::sci(s0.vs_loss_only16))
              : std::string("step 0 was skipped: its gradients held inf/NaN"));
  // Fails on .grad never zeroed between steps (each step adds the earlier steps' gradients: in fp16 they
  // come back divided by the scale, so penalty_step's fp32 run shows it) and on any drift: against the lab's
  // fp32 training, with the losses the lab computes from the final weights.
  r.check("training-matches-fp32", "fp16 training with the penalty ends at fp32's loss",
          std::abs(loss_ratio - 1) <= kTrainTol && std::abs(mine32_ratio - 1) <= kTrainTol &&
              f32.final_loss < f32.first.loss,
          fmt::format("{:.4f}x fp32's final loss (penalty_step in fp32: {:.4f}x; need within {}); fp32 went "
                      "from {} to {}",
                      loss_ratio, mine32_ratio, lab::percent(kTrainTol, 0), lab::sci(f32.first.loss),
                      lab::sci(f32.final_loss)));
  // Fails on a step taken past the scaler's skip (unscale_ then opt.step(): the weights go inf/NaN) and on a
  // returned flag that is not what the step did (here, or in any training step). A skip is one only where the
  // other steps train: a penalty_step that never steps fails too.
  const int flags_wrong = f16.flags_wrong + mine32.flags_wrong + (m.overflow.stepped != m.overflow.moved);
  // Trained: within 25% of fp32's final loss (a correct step: 1.0000x at seeds 0-2, quick; a step that never
  // steps 1.54-1.57x, where its last batch's loss can still be below its first).
  const bool f16_trained = f16.final_loss <= 1.25 * f32.final_loss;
  r.check("overflow-step-skipped",
          fmt::format("at a scale of {} fp16's gradients overflow and the step is skipped, while the other "
                      "steps train; every returned flag says what the step did",
                      lab::sci(kOverflowScale, 0)),
          !m.overflow.moved && !m.overflow.stepped && flags_wrong == 0 && f16_trained,
          fmt::format("at {}: weights {}, stepped {}; {} returned flag(s) the weights contradict; fp16 "
                      "training {}",
                      lab::sci(kOverflowScale, 0),
                      !m.overflow.moved   ? "unchanged"
                      : m.overflow.finite ? "moved"
                                          : "moved to inf/NaN",
                      m.overflow.stepped ? "true" : "false", flags_wrong,
                      f16_trained ? "lowered the loss" : "never lowered the loss"),
          {{"overflow_moved", m.overflow.moved},
           {"overflow_finite", m.overflow.finite},
           {"overflow_stepped", m.overflow.stepped},
           {"flags_wrong", flags_wrong},
           {"fp16_trained", f16_trained}});
}

// The small-gradient batch. Fails on a penalty from autograd::grad of the loss itself, not of
// scaler.scale(loss): correct in every precision with gradients that fp16 holds, it loses the small ones (the
// lab's own unscaled fp16 penalty shows how much); fails too when the batch stops being small (that penalty
// close to float64's).
void tiny_check(const Result& m, lab::Report& r) {
  r.check("small-gradients-penalty",
          "on a batch whose gradients fp16 loses unscaled, the penalty of the scaled gradients x 1/scale "
          "matches float64's",
          m.tiny.stepped && std::abs(m.tiny.ratio - 1) <= kTinyTol &&
              !(std::abs(m.tiny.unscaled_ratio - 1) < kTinyLostMin),
          fmt::format("penalty {} float64's (need within {}; {}); unscaled, the lab's fp16 penalty is {} "
                      "float64's (need off by >= {})",
                      ratio_text(m.tiny.ratio), lab::percent(kTinyTol, 0),
                      m.tiny.stepped ? "stepped" : "the step was skipped", ratio_text(m.tiny.unscaled_ratio),
                      lab::percent(kTinyLostMin, 0)));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 weights, fp16 autocast, float64 reference");
  r.note("fp16, the type a GradScaler exists for (the lab refuses --dtype)");
  r.note("penalty = ||d loss / d weights||_2, added to the loss");
  if (m.ctx.flip) r.note("FLIP: the penalty comes from the scaled gradients (no multiply by 1/scale)");
  report_step0(m, r);
  report_training(m, r);
  report_other_answers(m, r);
  report_tiny(m, r);
  r.takeaway(
      "torch::autograd::grad of scaler.scale(loss) returns gradients multiplied by the scale: multiply "
      "them by 1/scale before the penalty, then back-propagate scaler.scale(loss + penalty). update() "
      "only sets the next scale; it never touches gradients already computed.");
  add_checks(m, r);
  tiny_check(m, r);
}

}  // namespace

AMP_LAB(measure, report);
