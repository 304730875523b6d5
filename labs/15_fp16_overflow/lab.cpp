// Lab 15: an fp16 NaN that no loss scale fixes (quiz question 15). The AMP code is in amp.cpp.
//
// A one-head self-attention layer on inputs in raw units (features of size ~256). Its queries and keys fit
// fp16, but the scores q k^T sum products of them and pass fp16's largest value, 65504: under fp16 autocast
// the matmul returns inf, softmax makes NaN of it, and the loss is NaN from the first step. The lab
//   1. trains it under fp16 autocast with an amp::GradScaler: every step is skipped, the scale halves each
//      time, the loss never comes back; a smaller initial scale, a lower learning rate and gradient
//      clipping do the same,
//   2. finds the op with amp::find_nonfinite (src/amp/nonfinite.h) around one forward and backward, and
//      verifies it on its own: the scores computed in fp16 from the same q and k are not finite, and their
//      float64 values pass 65504,
//   3. fixes it two ways and trains each against fp32: the scores in fp32 inside the autocast region (the
//      guard in amp.cpp; also against an fp32 run that skips the steps its scaler skipped), and bf16
//      autocast (fp32's exponent range), with no guard and no scaler,
//   4. compares the guarded step-0 scores with float64 scores of the same q and k, and reads the dtype of
//      every tensor the forward returns in both runs (judge.cpp: that judges the learner's guard).
// The losses are the lab's own float64 forward pass of the trained weights.
//
// Run:  build/bin/lab15_fp16_overflow [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the lab uses fp16 and bf16)
// --flip: the inputs 16x smaller: the scores stay below 65504, the forward is finite, the scaler skips only
//         the first backward overflows of 2^16 (its ordinary business), and the watch names no forward op:
//         checks scale-collapses, watch-names-op and op-overflows-fp16 fail.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/grad_scaler.h"
#include "amp/nonfinite.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

using namespace lab15;

constexpr int64_t kBatch = 32, kTokens = 8, kDim = 16, kHeadDim = 16;  // x: [32, 8, 16]
constexpr double kInputScale = 256;    // the inputs' standard deviation: raw units, not normalized
constexpr double kFlipShrink = 16;     // --flip divides the inputs by 16: the scores / 256, in range
constexpr double kTargetNoise = 0.05;  // the targets' noise, relative to their standard deviation
constexpr int64_t kSteps = 120;        // Adam steps per training run
constexpr int64_t kStepsQuick = 40;    // ... in quick mode
constexpr int64_t kFewSteps = 8;       // the runs with a smaller scale or learning rate
constexpr double kLr = 2e-2;           // Adam's learning rate
constexpr double kLowerLr = 2e-4;      // the "lower learning rate" tried: 100x smaller
constexpr double kClipNorm = 1;        // the "gradient clipping" tried: clip_grad_norm_ to 1 after unscale_
constexpr double kSmallInitScale = 1;  // the "smaller initial loss scale" tried: no scaling at all
constexpr double kGainShare = 0.5;     // a fix makes at least half of fp32's loss reduction (see the checks)
constexpr double kScoresTolerance = 1e-5;  // guarded scores vs float64: fp32 rounding (bf16 would be ~4e-3)
constexpr const char* kScoresOp = "aten::bmm";  // what torch::matmul of [B, T, D] x [B, D, T] dispatches to
const double kFp16Max = static_cast<float>(std::numeric_limits<c10::Half>::max());  // 65504

// ---- measure -----------------------------------------------------------------------------------------

struct Problem {
  torch::Tensor x, y;
  Attention student{nullptr};
};

// The lab's own forward pass in float64, of a copy of `net`'s weights: the yardstick for every loss.
torch::Tensor reference_forward(const Attention& net, const torch::Tensor& x) {
  auto w = [](const torch::nn::Linear& l) { return l->weight.detach().to(torch::kDouble); };
  const torch::Tensor xd = x.to(torch::kDouble);
  const torch::Tensor q = torch::linear(xd, w(net->wq)), k = torch::linear(xd, w(net->wk));
  const torch::Tensor v = torch::linear(xd, w(net->wv));
  const torch::Tensor a =
      torch::softmax(torch::matmul(q, k.transpose(1, 2)) / std::sqrt(double(kHeadDim)), -1);
  return torch::linear(torch::matmul(a, v), w(net->out), net->out->bias.detach().to(torch::kDouble));
}

double eval_loss(const Attention& net, const Problem& p) {
  return torch::mse_loss(reference_forward(net, p.x), p.y.to(torch::kDouble)).item<double>();
}

Problem make_problem(const lab::Context& ctx) {
  Problem p;
  const double scale = ctx.flip ? kInputScale / kFlipShrink : kInputScale;
  p.x = torch::randn({kBatch, kTokens, kDim}, torch::dtype(torch::kFloat).device(ctx.device)) * scale;
  Attention teacher(kDim, kHeadDim);
  teacher->to(ctx.device);
  const torch::Tensor clean = reference_forward(teacher, p.x);
  p.y = (clean + kTargetNoise * clean.std() * torch::randn_like(clean)).to(torch::kFloat);
  p.student = Attention(kDim, kHeadDim);
  p.student->to(ctx.device);
  return p;
}

Attention copy_of(const Attention& net) {
  return std::dynamic_pointer_cast<AttentionImpl>(net->clone());
}

struct Run {
  double final_loss = 0;      // float64, the lab's forward
  int64_t skipped = 0;        // steps the scaler skipped
  int64_t finite = 0;         // steps whose loss was finite
  double last_scale = 1;      // the scale after the last update
  std::vector<bool> stepped;  // per step: whether the optimizer stepped
};

// `taken` (fp32 only): the steps to take, as another run's scaler took them (like for like).
Run train(const Problem& p, const lab::Context& ctx, torch::ScalarType dtype, bool guard, int64_t steps,
          double lr, amp::GradScalerOptions options, const std::vector<bool>* taken = nullptr) {
  Attention net = copy_of(p.student);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(lr));
  amp::GradScaler scaler(ctx.device, options);
  Run run;
  for (int64_t s = 0; s < steps; ++s) {
    double loss = 0;
    const bool stepped =
        taken && !(*taken)[s] ? false : train_step(net, opt, scaler, dtype, guard, p.x, p.y, &loss);
    run.stepped.push_back(stepped);
    if (!stepped) ++run.skipped;
    if (std::isfinite(loss)) ++run.finite;
  }
  if (options.enabled) run.last_scale = scaler.get_scale();
  run.final_loss = eval_loss(net, p);
  return run;
}

// The unchanged fp16 model with gradient clipping (unscale_, clip_grad_norm_, step): the steps skipped and
// the last gradient norm clip_grad_norm_ returned.
std::pair<int64_t, double> clipped_run(const Problem& p, const lab::Context& ctx) {
  Attention net = copy_of(p.student);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(kLr));
  amp::GradScaler scaler(ctx.device);
  int64_t skipped = 0;
  double norm = 0;
  for (int64_t s = 0; s < kFewSteps; ++s) {
    opt.zero_grad();
    const torch::Tensor l =
        torch::mse_loss(forward(net, torch::kHalf, p.x, /*guard=*/false).y.to(torch::kFloat), p.y);
    scaler.scale(l).backward();
    scaler.unscale_(opt);
    norm = torch::nn::utils::clip_grad_norm_(net->parameters(), kClipNorm);
    if (!scaler.step(opt)) ++skipped;
    scaler.update();
  }
  return {skipped, norm};
}

// One fp16 forward (and backward: the scaled loss's, as a step makes it) under the watch: the first op that
// made an inf or NaN.
std::optional<amp::NonfiniteOp> watch_step(const Problem& p, const lab::Context& ctx, bool guard,
                                           bool backward) {
  Attention net = copy_of(p.student);
  amp::GradScaler scaler(ctx.device);
  return amp::find_nonfinite([&] {
    const torch::Tensor l = torch::mse_loss(forward(net, torch::kHalf, p.x, guard).y.to(torch::kFloat), p.y);
    if (backward) scaler.scale(l).backward();
  });
}

struct Verify {
  bool fp16_nonfinite = false;  // the lab's own fp16 scores have an inf/NaN
  double max_abs = 0;           // their largest |value| in float64
};

// The scores op by hand, as autocast runs it: q and k from fp16 casts of x and the weights, then the
// matmul in fp16; and the same q, k multiplied in float64.
Verify verify_scores(const Problem& p) {
  const torch::Tensor x16 = p.x.to(torch::kHalf);
  const torch::Tensor q = torch::linear(x16, p.student->wq->weight.detach().to(torch::kHalf));
  const torch::Tensor k = torch::linear(x16, p.student->wk->weight.detach().to(torch::kHalf));
  const torch::Tensor s16 = torch::matmul(q, k.transpose(1, 2));
  const torch::Tensor s64 = torch::matmul(q.to(torch::kDouble), k.to(torch::kDouble).transpose(1, 2));
  return {.fp16_nonfinite = !torch::isfinite(s16).all().item<bool>(),
          .max_abs = s64.abs().max().item<double>()};
}

struct Result {
  lab::Context ctx;
  int64_t steps = 0;
  double initial_loss = 0;  // the untrained student's, float64
  Run fp32, fp16, small_scale, lower_lr, guarded, bf16;
  Run fp32_same_skips;  // fp32, skipping the steps the guarded run's scaler skipped
  int64_t clip_skipped = 0;
  double clip_norm = 0;                        // the gradient norm clip_grad_norm_ measured at the last step
  std::optional<amp::NonfiniteOp> op;          // the watch, unguarded
  std::optional<amp::NonfiniteOp> guarded_op;  // the watch, guarded (none expected)
  Verify verify;
  judge::GuardVerdict guard;  // the guarded forward at step 0 against float64 (judge.cpp)
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx};
  const Problem p = make_problem(ctx);
  m.steps = ctx.size(kSteps, kSteps, kStepsQuick);
  m.initial_loss = eval_loss(p.student, p);
  const amp::GradScalerOptions off{.enabled = false};
  m.fp32 = train(p, ctx, torch::kFloat, /*guard=*/false, m.steps, kLr, off);
  m.fp16 = train(p, ctx, torch::kHalf, /*guard=*/false, m.steps, kLr, {});
  m.small_scale =
      train(p, ctx, torch::kHalf, /*guard=*/false, kFewSteps, kLr, {.init_scale = kSmallInitScale});
  m.lower_lr = train(p, ctx, torch::kHalf, /*guard=*/false, kFewSteps, kLowerLr, {});
  std::tie(m.clip_skipped, m.clip_norm) = clipped_run(p, ctx);
  m.op = watch_step(p, ctx, /*guard=*/false, /*backward=*/true);
  m.verify = verify_scores(p);
  m.guarded = train(p, ctx, torch::kHalf, /*guard=*/true, m.steps, kLr, {});
  m.fp32_same_skips = train(p, ctx, torch::kFloat, /*guard=*/false, m.steps, kLr, off, &m.guarded.stepped);
  m.bf16 = train(p, ctx, torch::kBFloat16, /*guard=*/false, m.steps, kLr, off);
  // The forward only: at 2^16 a first backward may overflow, which the scaler handles.
  m.guarded_op = watch_step(p, ctx, /*guard=*/true, /*backward=*/false);
  Attention net = copy_of(p.student);
  m.guard = judge::judge_guard(net, p.x);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

std::string pow2(double v) {
  return v > 0 ? fmt::format("2^{:g}", std::round(std::log2(v))) : "0";
}

std::string op_name(const std::optional<amp::NonfiniteOp>& op) {
  return op ? op->op : "none";
}

void report_symptom(const Result& m, lab::Report& r) {
  r.dtypes("fp16 and bf16", "fp16 and bf16 autocast, fp32 weights and loss, float64 reference losses");
  if (m.ctx.flip) r.note("FLIP: the inputs are 16x smaller (scores / 256)");
  r.section(fmt::format("fp16 autocast + GradScaler (init scale 2^16), {} Adam steps, no change", m.steps));
  r.observe("skipped_unfixed", "steps the scaler skipped", static_cast<double>(m.fp16.skipped), "",
            fmt::format("{} of {}", m.fp16.skipped, m.steps));
  r.observe("finite_losses_unfixed", "steps with a finite loss", static_cast<double>(m.fp16.finite));
  r.observe("final_scale_unfixed", "the scale after the last step", m.fp16.last_scale, "",
            fmt::format("{} ({})", pow2(m.fp16.last_scale), lab::sci(m.fp16.last_scale)));
}

void report_op(const Result& m, lab::Report& r) {
  r.section("amp::find_nonfinite around one fp16 forward and backward");
  r.observe("op_name", "the first op to make an inf/NaN", m.op ? 1 : 0, "", op_name(m.op));
  r.observe("op_phase", "its phase", m.op ? 1 : 0, "", m.op ? m.op->phase : "-");
  r.observe("op_max_abs", "the scores' largest |value| (float64)", m.verify.max_abs, "",
            fmt::format("{:.0f} (fp16's max: {:.0f})", m.verify.max_abs, kFp16Max));
}

void report_op_details(const Result& m, lab::Report& r) {
  r.detail_section("The op, as amp::find_nonfinite saw it");
  r.observe("op_inputs", "its inputs", m.op ? 1 : 0, "", m.op ? m.op->inputs : "-");
  r.observe("op_within", "called from", m.op ? 1 : 0, "", m.op && !m.op->within.empty() ? m.op->within : "-");
}

void report_tries(const Result& m, lab::Report& r) {
  r.detail_section(fmt::format("The same fp16 model, {} steps each, with one setting changed", kFewSteps));
  r.observe("small_scale_skipped", fmt::format("init scale {:g}: steps skipped", kSmallInitScale),
            static_cast<double>(m.small_scale.skipped), "",
            fmt::format("{} of {}", m.small_scale.skipped, kFewSteps));
  r.observe("lower_lr_skipped", fmt::format("learning rate {:g} (not {:g}): steps skipped", kLowerLr, kLr),
            static_cast<double>(m.lower_lr.skipped), "",
            fmt::format("{} of {}", m.lower_lr.skipped, kFewSteps));
  r.observe("clip_skipped", fmt::format("gradients clipped to norm {:g}: steps skipped", kClipNorm),
            static_cast<double>(m.clip_skipped), "", fmt::format("{} of {}", m.clip_skipped, kFewSteps));
  r.observe("clip_norm", "the gradient norm clip_grad_norm_ saw", m.clip_norm, "", lab::num(m.clip_norm));
}

// (initial - run's) / (initial - fp32's) final loss: 1 as fp32 trains, 0 when the weights never move.
double gain_share(const Result& m, const Run& run) {
  return (m.initial_loss - run.final_loss) / (m.initial_loss - m.fp32.final_loss);
}

void report_fixes(const Result& m, lab::Report& r) {
  r.detail_section(fmt::format("Two changes, {} steps each: final MSE (float64), x fp32's", m.steps));
  r.observe("loss_initial", "before training", m.initial_loss, "", lab::sci(m.initial_loss));
  r.observe("loss_fp32", "fp32 (autocast off)", m.fp32.final_loss, "", lab::sci(m.fp32.final_loss));
  auto ratio = [&](const Run& run) { return run.final_loss / m.fp32.final_loss; };
  r.observe("loss_ratio_guarded", "fp16, scores in fp32 (guard)", ratio(m.guarded), "x",
            fmt::format("{:.3f}x", ratio(m.guarded)));
  r.observe("skipped_guarded", "... steps its scaler skipped", static_cast<double>(m.guarded.skipped), "",
            fmt::format("{} of {}", m.guarded.skipped, m.steps));
  const double same = m.guarded.final_loss / m.fp32_same_skips.final_loss;
  r.observe("loss_ratio_guarded_same_skips", "... x fp32's skipping the same steps", same, "x",
            fmt::format("{:.3f}x", same));
  r.observe("gain_share_guarded", "... share of fp32's loss reduction", gain_share(m, m.guarded), "",
            fmt::format("{:.3f}", gain_share(m, m.guarded)));
  r.observe("loss_ratio_bf16", "bf16, no guard, no scaler", ratio(m.bf16), "x",
            fmt::format("{:.3f}x", ratio(m.bf16)));
  r.observe("gain_share_bf16", "... share of fp32's loss reduction", gain_share(m, m.bf16), "",
            fmt::format("{:.3f}", gain_share(m, m.bf16)));
  r.observe("scores_error_guarded", "guarded step-0 scores vs float64 (max relative)", m.guard.scores_error,
            "", lab::sci(m.guard.scores_error));
  // Not finite in fp32 scores: they were made in 16 bits and cast after the overflow.
  r.observe("scores_fp32_nonfinite", "guarded step-0 scores: inf/NaN values while fp32",
            m.guard.scores_dtype == "fp32" ? static_cast<double>(m.guard.scores_nonfinite) : 0.0);
}

// The checks of the diagnosis: the scale collapses, and the op that overflows is the scores matmul.
void report_diagnosis_checks(const Result& m, lab::Report& r) {
  const double halved = amp::GradScalerOptions{}.init_scale * std::ldexp(1.0, -static_cast<int>(m.steps));
  r.check(
      "scale-collapses",
      "without a change every fp16 step is skipped, the loss is never finite, the scale halves each step",
      m.fp16.skipped == m.steps && m.fp16.finite == 0 && m.fp16.last_scale <= halved,
      fmt::format("{} of {} skipped, {} finite losses, scale {} (2^16 halved {} times: {})", m.fp16.skipped,
                  m.steps, m.fp16.finite, pow2(m.fp16.last_scale), m.steps, pow2(halved)));
  // The smaller initial scale, the lower learning rate and clipping (report_tries) are shown, not checked:
  // the first forward overflows before any of them acts, which op-overflows-fp16 checks.
  r.check("watch-names-op",
          fmt::format("amp::find_nonfinite names the scores matmul ({}) in the forward", kScoresOp),
          m.op && m.op->op == kScoresOp && m.op->phase == "forward",
          m.op ? fmt::format("{} ({}, inputs {})", m.op->op, m.op->phase, m.op->inputs)
               : "no op made an inf/NaN");
  r.check("op-overflows-fp16",
          "the lab's own fp16 scores from the same q, k are not finite, their float64 values pass 65504",
          m.verify.fp16_nonfinite && m.verify.max_abs > kFp16Max,
          fmt::format("fp16 {}; largest |value| {:.0f} (fp16's max {:.0f})",
                      m.verify.fp16_nonfinite ? "not finite" : "finite", m.verify.max_abs, kFp16Max));
}

// The checks of the fixes: the guarded scores in fp32 and bf16 both train, the rest staying in 16 bits.
void report_fix_checks(const Result& m, lab::Report& r) {
  // Catches a guard that leaves the matmul in 16 bits (no cast, autocast still on, bf16) or casts back.
  r.check("guarded-scores-fp32", "the guarded scores are fp32 and match float64 (same q and k)",
          m.guard.scores_dtype == "fp32" && m.guard.scores_error <= kScoresTolerance,
          fmt::format(
              "{} scores, max relative error {} (need <= {}); first inf/NaN op of the guarded forward: {}",
              m.guard.scores_dtype, lab::sci(m.guard.scores_error), lab::sci(kScoresTolerance),
              op_name(m.guarded_op)),
          {{"scores_fp32", m.guard.scores_dtype == "fp32"},
           {"scores_fp16", m.guard.scores_dtype == "fp16"},
           {"scores_bf16", m.guard.scores_dtype == "bf16"},
           {"scores_error", m.guard.scores_error},
           // The guarded forward's first inf/NaN came from the scores matmul itself: it ran in 16 bits.
           {"guarded_scores_overflowed", m.guarded_op && m.guarded_op->op == kScoresOp}});
  // Catches a guard that does not stop the overflow: the weights never move, no loss reduction at all (0).
  // Measured as the share of fp32's loss reduction, not as a ratio of final losses: fp16's rounding of the
  // attention changes which key a few rows attend to, which moves the final loss either way (against fp32:
  // 0.87-1.14x; against an fp32 run that skipped the same steps: 0.88-1.14x), while the share stays near 1
  // (0.86-1.23) and an unfixed run's is 0. The bound 0.5 has room on both sides. Ranges: seeds
  // 0-109, default and --quick, on a 2-core AMD EPYC (family 25 model 17).
  const double guarded = gain_share(m, m.guarded), bf16 = gain_share(m, m.bf16);
  r.check("guard-trains-like-fp32",
          fmt::format("fp16 with the scores in fp32 makes at least {:.0f}% of fp32's loss reduction",
                      100 * kGainShare),
          guarded >= kGainShare,
          fmt::format("{:.3f} of fp32's reduction, {:.3f}x fp32's loss, {} of {} steps skipped", guarded,
                      m.guarded.final_loss / m.fp32.final_loss, m.guarded.skipped, m.steps));
  // Catches a bf16 run that does not train (NaN: the forward in fp16 after all, with no scaler). The same
  // measure: bf16's coarser scores land its final loss on either side of fp32's (0.76-1.09x), its share of
  // the reduction 0.86-1.48.
  r.check("bf16-trains-like-fp32",
          fmt::format("bf16 autocast (no guard, no scaler) makes at least {:.0f}% of fp32's loss reduction",
                      100 * kGainShare),
          bf16 >= kGainShare,
          fmt::format("{:.3f} of fp32's reduction, {:.3f}x fp32's loss", bf16,
                      m.bf16.final_loss / m.fp32.final_loss));
  // Catches a forward that ignores the dtype asked for (autocast off, or always fp16), a guard whose
  // autocast-off region runs past the scores (the values' matmul and the read-out in fp32): v and the
  // output y, in both runs; and a guard that moves nothing to fp32, which is no narrow guard: the scores
  // must be fp32.
  const bool rest16 = m.guard.scores_dtype == "fp32" && m.guard.v_dtype_fp16 == "fp16" &&
                      m.guard.y_dtype_fp16 == "fp16" && m.guard.v_dtype_bf16 == "bf16" &&
                      m.guard.y_dtype_bf16 == "bf16";
  r.check(
      "rest-in-16-bit",
      "the guard moves the scores alone to fp32: with it (or with bf16) the other matmuls still run in the "
      "16-bit type asked for",
      rest16,
      fmt::format("guarded scores {}; v: {} in the fp16 run, {} in the bf16 run; y: {} in the fp16 run, {} "
                  "in the bf16 run",
                  m.guard.scores_dtype, m.guard.v_dtype_fp16, m.guard.v_dtype_bf16, m.guard.y_dtype_fp16,
                  m.guard.y_dtype_bf16),
      {{"scores_fp32", m.guard.scores_dtype == "fp32"},
       {"fp16_in_bf16_run", m.guard.v_dtype_bf16 == "fp16" || m.guard.y_dtype_bf16 == "fp16"},
       {"v_fp32_in_fp16_run", m.guard.v_dtype_fp16 == "fp32"},
       {"y_fp32_in_fp16_run", m.guard.y_dtype_fp16 == "fp32"}});
}

void report_checks(const Result& m, lab::Report& r) {
  report_diagnosis_checks(m, r);
  report_fix_checks(m, r);
  r.takeaway(
      "a loss scale multiplies gradients: it cannot bring back a forward value past fp16's 65504. Find the "
      "op "
      "that made the first inf and run it in fp32 inside the autocast region, or use bf16");
}

void report(const Result& m, lab::Report& r) {
  report_symptom(m, r);
  report_op(m, r);
  report_op_details(m, r);
  report_tries(m, r);
  report_fixes(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
