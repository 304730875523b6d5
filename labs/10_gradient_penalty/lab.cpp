// Lab 10: a gradient penalty with a GradScaler (PyTorch's AMP examples, "Gradient penalty"; Q10). The AMP
// code is in amp.cpp.
//
// The penalty is the L2 norm of the loss's gradients with respect to the weights, added to the loss.
// torch::autograd::grad of the *scaled* loss returns scaled gradients, so the recipe multiplies them by
// 1/scale, computes the penalty with autocast on, then scales loss + penalty for backward. The lab computes
// the penalty at step 0 from the same weights and batch in float64, fp32 and fp16 (recipe, and from the
// gradients as returned), compares the gradients of loss + penalty that the optimizer receives with
// float64's, tries the question's other answers (update() before the penalty, a cast to fp16), then
// trains with the penalty in float64, fp32 and fp16.
//
// Run:  build/bin/lab10_gradient_penalty [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (fp16 whatever --dtype says: the type a GradScaler exists for)
// --flip: the fp16 run steps with penalty_step_scaled_grads (below), amp.cpp's step without the multiply by
//         1/scale: the penalty comes from the scaled gradients. Checks penalty-matches-fp64,
//         penalty-gradients-match-fp64 and training-matches-fp32 fail.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/registry.h"
#include "lab/report.h"
#include "lab/teacher_student.h"

namespace {

constexpr int64_t kIn = 16, kHidden = 32, kOut = 4;  // a two-layer tanh MLP regressor, its teacher alike
constexpr int64_t kBatch = 64;                       // one fixed batch
constexpr double kLr = 0.02;                         // SGD learning rate
constexpr double kInitScale = 1024;   // 2^10: step 0 does not overflow, so its penalty can be compared
constexpr double kPenaltyTol = 0.01;  // the fp16-autocast run's penalty within 1% of float64's
constexpr double kGradTol = 0.01;     // the optimizer's gradients within 1% (relative norm) of float64's
constexpr double kTrainTol = 0.05;    // fp16 final loss within 5% of fp32's

using namespace lab10;

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
  decltype(&penalty_step) step = penalty_step;  // --flip: the fp16 run's is penalty_step_scaled_grads
  Step first, last;
  torch::Tensor first_grads;  // what the optimizer received at step 0 (.grad after step's unscale)
  int skipped = 0;
  double final_scale = 1;
};

struct Result {
  lab::Context ctx;
  int64_t steps = 0;
  std::vector<Run> runs;            // float64, fp32, fp16
  double returned_penalty = 0;      // fp16: the norm of the gradients as autograd::grad returned them
  double fp16_cast_penalty = 0;     // ... cast to fp16 and squared there
  std::string update_error;         // update() right after autograd::grad
  bool returned_unchanged = false;  // the returned gradients, bitwise, after an update() that ran
  double scale_after_update = 0;    // the scale that update() set
  // The dtypes the recipe's penalty is computed in under fp16 autocast: autograd::grad's gradients are the
  // fp32 weights' dtype, and pow, sum and sqrt are on no list that casts to fp16, so its arithmetic is fp32.
  torch::ScalarType grad_dtype = torch::kFloat, penalty_dtype = torch::kFloat;
};

struct Setup {
  torch::nn::Sequential start;
  torch::Tensor x, y;
};

torch::nn::Sequential copy_of(const torch::nn::Sequential& m, torch::ScalarType dtype = torch::kFloat) {
  auto c = torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
  c->to(dtype);
  return c;
}

torch::Tensor flat_grads(const torch::nn::Sequential& m) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : m->parameters()) parts.push_back(p.grad().detach().to(torch::kDouble).flatten());
  return torch::cat(parts);
}

double norm_of(const std::vector<torch::Tensor>& grads, torch::ScalarType dtype) {
  torch::Tensor sum_sq = torch::zeros({}, torch::TensorOptions().dtype(dtype));
  for (const auto& g : grads) sum_sq = sum_sq + g.detach().to(dtype).pow(2).sum();
  return sum_sq.sqrt().item<double>();
}

void train(const Setup& s, int64_t steps, Run& run) {
  torch::nn::Sequential m = copy_of(s.start, run.dtype);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler(s.x.device(), {.init_scale = kInitScale, .enabled = run.fp16});
  const auto x = s.x.to(run.dtype), y = s.y.to(run.dtype);
  for (int64_t i = 0; i < steps; ++i) {
    const Step st = run.step(m, opt, scaler, run.fp16, x, y);
    if (i == 0) {
      run.first = st;
      run.first_grads = flat_grads(m);
    }
    run.last = st;
    run.skipped += !st.stepped;
  }
  run.final_scale = scaler.get_scale();
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
  r.runs = {{.name = "float64", .dtype = torch::kDouble},
            {.name = "fp32", .dtype = torch::kFloat},
            {.name = ctx.flip ? "fp16, not unscaled" : "fp16 recipe",
             .dtype = torch::kFloat,
             .fp16 = true,
             .step = ctx.flip ? penalty_step_scaled_grads : penalty_step}};
  for (Run& run : r.runs) train(s, r.steps, run);
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
  const Run &f32 = m.runs[1], &f16 = m.runs[2];
  r.detail_section(fmt::format("{} SGD steps with the penalty (lr {}), from the same start", m.steps, kLr));
  const Run& ref = m.runs[0];
  r.observe("penalty_ref", "penalty at step 0, float64", ref.first.penalty, "", lab::sci(ref.first.penalty));
  const double ratio_returned = m.returned_penalty / ref.first.penalty;
  r.observe("penalty_ratio_scaled_grads", "from the gradients as returned / float64", ratio_returned, "x",
            times(ratio_returned));
  auto& t = r.table("", {"run", "penalty, step 0", "final loss", "vs fp32", "skipped", "final scale"});
  for (const Run& run : m.runs)
    t.row({run.name, lab::sci(run.first.penalty), lab::sci(run.last.loss),
           fmt::format("{:.4f}x", run.last.loss / f32.last.loss), std::to_string(run.skipped),
           lab::num(run.final_scale)});
  const double ratio = f16.first.penalty / m.runs[0].first.penalty;
  r.observe("penalty_ratio", "fp16-autocast run's penalty / float64 penalty, step 0", ratio, "x",
            fmt::format("{:.4f}x", ratio));
  r.observe("penalty_dtype", "dtype the penalty is computed in under fp16 autocast",
            static_cast<double>(c10::elementSize(m.penalty_dtype) * 8), "",
            fmt::format("{} (its gradients are {}: pow, sum and sqrt are not cast to fp16)",
                        lab::short_name(m.penalty_dtype), lab::short_name(m.grad_dtype)));
  const double grad_err = f16.first.stepped ? rel(f16.first_grads, m.runs[0].first_grads)
                                            : std::numeric_limits<double>::infinity();
  r.observe("penalty_grad_error", "fp16: the optimizer's gradients at step 0 vs float64's", grad_err, "",
            f16.first.stepped ? lab::sci(grad_err) : "inf/NaN (step 0 skipped)");
  const double loss_ratio = f16.last.loss / f32.last.loss;
  r.observe("loss_ratio_fp16", "fp16 final loss / fp32 final loss", loss_ratio, "x",
            fmt::format("{:.4f}x", loss_ratio));
  r.observe("skipped_steps", "fp16 steps skipped", f16.skipped);
  r.observe("trained", "fp32 final loss / initial loss", f32.last.loss / f32.first.loss, "x",
            fmt::format("{:.4f}x", f32.last.loss / f32.first.loss));
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

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp32 weights, fp16 autocast, float64 reference");
  r.note(fmt::format("fp16 whatever --dtype says{}: the type a GradScaler exists for",
                     m.ctx.dtype_given && m.ctx.dtype != torch::kHalf ? " (bf16 asked for, fp16 used)" : ""));
  r.note("penalty = ||d loss / d weights||_2, added to the loss");
  if (m.ctx.flip) r.note("FLIP: the penalty comes from the scaled gradients (no multiply by 1/scale)");
  report_step0(m, r);
  report_training(m, r);
  report_other_answers(m, r);
  const Run &ref = m.runs[0], &f32 = m.runs[1], &f16 = m.runs[2];
  const double ratio = f16.first.penalty / ref.first.penalty;
  const double grad_err = f16.first.stepped ? rel(f16.first_grads, ref.first_grads) : 0.0;
  const double loss_ratio = f16.last.loss / f32.last.loss;
  r.takeaway(
      "torch::autograd::grad of scaler.scale(loss) returns gradients multiplied by the scale: multiply "
      "them by 1/scale before the penalty, then back-propagate scaler.scale(loss + penalty). update() "
      "only sets the next scale; it never touches gradients already computed.");
  r.check("penalty-matches-fp64",
          "the penalty under fp16 autocast, from gradients multiplied by 1/scale, matches float64's",
          std::abs(ratio - 1) <= kPenaltyTol,
          fmt::format("{:.4f}x the float64 penalty (need within {})", ratio, lab::percent(kPenaltyTol, 0)));
  r.check("penalty-gradients-match-fp64",
          "the gradients of loss + penalty that the optimizer received at step 0 match float64's",
          f16.first.stepped && grad_err <= kGradTol,
          f16.first.stepped
              ? fmt::format("{} from float64 (need <= {})", lab::sci(grad_err), lab::sci(kGradTol, 1))
              : std::string("step 0 was skipped: its gradients held inf/NaN"));
  r.check("training-matches-fp32", "fp16 training with the penalty ends at fp32's loss",
          std::abs(loss_ratio - 1) <= kTrainTol && f32.last.loss < f32.first.loss,
          fmt::format("{:.4f}x fp32's final loss (need within {}); fp32 went from {} to {}", loss_ratio,
                      lab::percent(kTrainTol, 0), lab::sci(f32.first.loss), lab::sci(f32.last.loss)));
}

}  // namespace

AMP_LAB(measure, report);
