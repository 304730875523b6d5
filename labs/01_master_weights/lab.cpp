// Lab 01: FP32 master weights keep the small updates that 16-bit storage loses (quiz question 1). The AMP
// code is in amp.cpp.
//
// The mixed-precision step keeps the model's parameters in fp32 (the master weights): autocast runs the
// forward pass in 16 bits from 16-bit copies of them, and the optimizer adds each update to the fp32
// weights. Pure 16-bit training stores the weights themselves in 16 bits, so every update is rounded to
// 16 bits as it is added. The question is about FP16, so the lab runs fp16 unless --dtype names a type.
// (a) w = 1 in 16 bits plus 100 updates of 1e-4 stays 1 (fp16's spacing at 1 is 2^-10, bf16's 2^-7); in
//     fp32 it moves to 1.01. Over random weights: fp16 keeps an update of 2^-11 of the weight, loses one
//     of 2^-12, and in between it depends on the weight's mantissa (bf16: 2^-8, 2^-9); an exact tie
//     rounds to even. The paper's "smaller than 2^-11 of its weight is lost" is the band's upper end.
// (b) A seeded teacher-student regression, fine-tuned from near the teacher (updates small next to the
//     weights), trained with SGD in fp32, in pure 16-bit and with fp32 master weights (autocast, and a
//     GradScaler for fp16). Per step: the share of updates (grad != 0) that left the stored weight
//     unchanged; final losses in float64. After the answer, a log2 histogram of |lr x grad| / |weight|
//     over the fp32 run's updates, the bound marked: the paper's figure.
//
// Run:  build/bin/lab01_master_weights [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--seed N] [--json]
// --flip: the "16-bit" storage is fp32 instead (in (a) and for the pure run in (b)): nothing is lost, and
//         fp32's bound (2^-24) lies below the run's updates, so checks lost-below-bound,
//         updates-below-bound and pure-16bit-loses-updates fail (master-weights-track-fp32 still holds).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include "amp.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

using lab01::master_weights_step;
using lab01::plain_step;
using torch::nn::Sequential;

constexpr double kSmallUpdate = 1e-4;     // (a) the update added to w = 1
constexpr int kRepeats = 100;             // (a) how many times it is added
constexpr int64_t kRuleSamples = 100000;  // (a) random weights per update/weight ratio
constexpr int64_t kIn = 16;               // model input features
constexpr int64_t kHidden = 64;           // hidden units (tanh)
constexpr int64_t kOut = 4;               // outputs
constexpr int64_t kSamples = 256;         // one full batch of fixed data
constexpr double kInitRange = 1.5;        // teacher weights uniform in [-1.5, 1.5]: weights ~1
constexpr double kPerturb = 0.05;         // student = teacher + N(0, 0.05^2): fine-tuning, small updates
constexpr double kLr = 1e-2;              // SGD step; lr * grad is mostly below 2^-11 of the weight
constexpr double kLostLarge = 0.5;        // pure 16-bit: mean lost share above this is "large"
constexpr double kWorseRatio = 1.5;       // pure 16-bit: final loss at least this times fp32's
constexpr double kMasterMaxLost = 0.01;   // master weights: lost share stays below 1% at every step
constexpr double kTrackTol = 0.05;        // master weights: final loss within 5% of fp32's

// ---- measure -----------------------------------------------------------------------------------------

Sequential copy_of(const Sequential& m) {
  return Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
}

// Loss of the stored weights, evaluated in float64 so the comparison itself adds no rounding.
double loss64(const Sequential& m, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  Sequential m64 = copy_of(m);
  m64->to(torch::kDouble);
  return torch::mse_loss(m64->forward(x.to(torch::kDouble)), y.to(torch::kDouble)).item<double>();
}

// The spacing of `dtype` at 1, measured: the largest 2^-k that still moves 1 when added.
double spacing_at_one(torch::ScalarType dtype) {
  auto one = torch::ones({}, torch::dtype(dtype));
  double s = 1.0;
  while ((one + std::ldexp(1.0, -1) * s).item<double>() != 1.0) s /= 2;
  return s;
}

// (a) Adding to single weights stored in `store`.
struct Rounding {
  double w_fp32 = 0, w_store = 0;    // w = 1 after kRepeats updates of kSmallUpdate
  double spacing = 0;                // store's spacing at 1
  double tie_even = 0, tie_odd = 0;  // 1 + spacing/2, and (1 + spacing) + spacing/2
  int rule = 0;                      // updates of 2^-rule of the weight are kept, of 2^-(rule+1) lost
  std::vector<double> ratio_exp;     // the update / weight ratios tried, as 2^-k
  std::vector<double> lost;          // the share left unchanged at each
};

Rounding measure_rounding(const lab::Context& ctx, torch::ScalarType low, torch::ScalarType store) {
  Rounding a;
  double w_after[2];
  for (int k = 0; k < 2; ++k) {
    auto w = torch::ones({}, torch::dtype(k == 0 ? torch::kFloat : store).device(ctx.device));
    for (int i = 0; i < kRepeats; ++i) w.add_(kSmallUpdate);  // stored back in w's own dtype each time
    w_after[k] = w.item<double>();
  }
  a.w_fp32 = w_after[0];
  a.w_store = w_after[1];
  a.spacing = spacing_at_one(store);
  // Exact ties (an update of half the spacing) round to the neighbour with an even last mantissa bit.
  auto in_store = [&](double v, double u) {
    return (torch::full({}, v, torch::dtype(store)) + u).item<double>();
  };
  a.tie_even = in_store(1.0, a.spacing / 2);
  a.tie_odd = in_store(1.0 + a.spacing, a.spacing / 2);
  // The rule over random weights (magnitudes 2^-2..2^2, random signs) and random-signed updates. Flipped,
  // the 16-bit format's rule is still the one tried, so the table shows fp32 keeping what 16 bits lose.
  a.rule = ctx.flip ? (low == torch::kHalf ? 11 : 8) : static_cast<int>(-std::log2(a.spacing)) + 1;
  auto mag = torch::exp2(torch::rand({kRuleSamples}, torch::dtype(torch::kFloat).device(ctx.device)) * 4 - 2);
  auto sign = [&] { return torch::randint(0, 2, {kRuleSamples}, mag.options()) * 2 - 1; };
  auto w = (mag * sign()).to(store);
  for (double k : {a.rule - 1.0, double(a.rule), a.rule + 0.5, a.rule + 1.0, a.rule + 2.0}) {
    auto u = (w.to(torch::kFloat).abs() * std::exp2(-k) * sign()).to(store);
    a.ratio_exp.push_back(k);
    a.lost.push_back((w + u == w).to(torch::kFloat).mean().item<double>());  // the sum stored in `store`
  }
  return a;
}

// (b) One training run.
struct Run {
  std::vector<double> lost;  // per applied step: share of updates (grad != 0) that changed nothing
  std::vector<double> loss;  // float64 loss after the table's steps
  double final_loss = 0;
  int skipped = 0;  // steps the GradScaler skipped (inf/NaN): not rounding losses, left out of `lost`
};

enum class Mode { Fp32, Pure16, Master };

struct Data {
  torch::Tensor x, y;
  std::vector<int64_t> rows;  // the steps the table shows
};

// Of the parameters whose gradient asked for an update, the share still equal to their value `before`.
double unchanged_share(const Sequential& model, const std::vector<torch::Tensor>& before) {
  double unchanged = 0, updated = 0;
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto asked = params[i].grad() != 0;
    updated += asked.sum().item<double>();
    unchanged += (asked & (params[i].detach() == before[i])).sum().item<double>();
  }
  return updated > 0 ? unchanged / updated : 0.0;
}

Run train(Mode mode, const Sequential& start, const Data& d, int64_t steps, torch::ScalarType low,
          torch::ScalarType store, std::vector<torch::Tensor>* ratios = nullptr) {
  Sequential model = copy_of(start);
  if (mode == Mode::Pure16) model->to(store);  // weights, activations and grads in 16 bits
  const torch::Tensor x = mode == Mode::Pure16 ? d.x.to(store) : d.x;
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler(d.x.device(), {.enabled = low == torch::kHalf});
  Run run;
  for (int64_t step = 1; step <= steps; ++step) {
    std::vector<torch::Tensor> before;
    for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
    bool stepped = true;
    if (mode == Mode::Master)
      stepped = master_weights_step(model, opt, scaler, low, x, d.y);
    else
      plain_step(model, opt, x, d.y);
    if (ratios)  // the update SGD was asked to make, relative to the weight it was added to
      for (size_t i = 0; i < before.size(); ++i)
        ratios->push_back((model->parameters()[i].grad() * kLr).abs().flatten() / before[i].abs().flatten());
    if (stepped)
      run.lost.push_back(unchanged_share(model, before));
    else
      ++run.skipped;
    if (std::find(d.rows.begin(), d.rows.end(), step) != d.rows.end())
      run.loss.push_back(loss64(model, d.x, d.y));
  }
  run.final_loss = loss64(model, d.x, d.y);
  return run;
}

struct Result {
  lab::Context ctx;
  torch::ScalarType low = torch::kHalf;    // the 16-bit format of the question (fp16 unless --dtype)
  torch::ScalarType store = torch::kHalf;  // where the "16-bit" weights live (--flip: fp32)
  Rounding a;
  int64_t steps = 0;
  Data d;
  double initial_loss = 0;
  Run fp32, pure, master;
  torch::Tensor ratios;  // |lr x grad| / |weight| of every update of the fp32 run
  int fp32_bound = 0;    // fp32 loses an update of 2^-fp32_bound of the weight (from its spacing at 1)
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .low = ctx.dtype_given ? ctx.dtype : torch::kHalf};
  m.store = ctx.flip ? torch::kFloat : m.low;
  m.a = measure_rounding(ctx, m.low, m.store);

  // (b) Teacher-student regression; the student starts near the teacher (fine-tuning).
  m.steps = ctx.size(300, 600, 100);
  // The layers in named statements, so that the seed fixes the same teacher under every compiler (a call's
  // arguments are evaluated in an unspecified order): last to first, the order g++ took.
  const torch::nn::Linear teacher_out(kHidden, kOut);
  const torch::nn::Linear teacher_in(kIn, kHidden);
  Sequential teacher(teacher_in, torch::nn::Tanh(), teacher_out);
  teacher->to(ctx.device);
  Sequential student = nullptr;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : teacher->parameters()) p.uniform_(-kInitRange, kInitRange);
    m.d.x = torch::randn({kSamples, kIn}, torch::device(ctx.device)) / std::sqrt(double(kIn));
    m.d.y = teacher->forward(m.d.x);
    student = copy_of(teacher);
    for (auto& p : student->parameters()) p.add_(torch::randn_like(p) * kPerturb);
  }
  m.d.rows = {1, m.steps / 3, 2 * m.steps / 3, m.steps};
  m.initial_loss = loss64(student, m.d.x, m.d.y);
  std::vector<torch::Tensor> ratios;
  m.fp32 = train(Mode::Fp32, student, m.d, m.steps, m.low, m.store, &ratios);
  m.pure = train(Mode::Pure16, student, m.d, m.steps, m.low, m.store);
  m.master = train(Mode::Master, student, m.d, m.steps, m.low, m.store);
  m.ratios = torch::cat(ratios);
  m.fp32_bound = static_cast<int>(-std::log2(spacing_at_one(torch::kFloat))) + 1;
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::string store_name(const Result& m) {
  return m.ctx.flip ? "fp32 (flip)" : lab::short_name(m.store);
}

void report_rounding(const Result& m, lab::Report& r) {
  const Rounding& a = m.a;
  const std::string store = store_name(m);
  r.section(fmt::format("(a) w = 1 plus {} updates of {}, stored in {} and in fp32", kRepeats, kSmallUpdate,
                        store));
  r.observe("w_after_fp32", "fp32 w after the updates", a.w_fp32, "", fmt::format("{:.6f}", a.w_fp32));
  r.observe("w_after_16bit", store + " w after the updates", a.w_store, "", fmt::format("{:.6f}", a.w_store));
  auto& t = r.table(
      fmt::format("{} random weights in {}, each plus ratio x |w|: share unchanged", kRuleSamples, store),
      {"update / weight", "unchanged"});
  for (size_t i = 0; i < a.lost.size(); ++i)
    t.row({fmt::format("2^-{:g}", a.ratio_exp[i]), lab::percent(a.lost[i])});
}

void report_training(const Result& m, lab::Report& r) {
  r.section(fmt::format("(b) {} SGD steps (lr {}) of a tanh MLP, weights ~1, initial loss {}", m.steps, kLr,
                        lab::sci(m.initial_loss)));
  auto& tt = r.table(
      fmt::format("Updates that changed nothing; fp64 loss (pure: {} weights, master: fp32)", store_name(m)),
      {"step", "lost fp32", "lost pure", "lost master", "loss fp32", "loss pure", "loss master"});
  for (size_t i = 0; i < m.d.rows.size(); ++i) {
    const size_t s = static_cast<size_t>(m.d.rows[i] - 1);
    auto at = [&](const Run& run) { return s < run.lost.size() ? lab::percent(run.lost[s]) : "-"; };
    tt.row({std::to_string(m.d.rows[i]), at(m.fp32), at(m.pure), at(m.master), lab::sci(m.fp32.loss[i]),
            lab::sci(m.pure.loss[i]), lab::sci(m.master.loss[i])});
  }
}

// The bound of the storage format, measured from its spacing at 1: updates of 2^-bound of the weight are
// kept, of 2^-(bound+1) lost (fp16 11, bf16 8, fp32 under --flip 24).
int bound_of(const Result& m) {
  return static_cast<int>(-std::log2(m.a.spacing)) + 1;
}

// The share of the fp32 run's updates below 2^-(bound+1) of their weight: ones the storage format loses.
double below_bound(const Result& m) {
  return (m.ratios < std::ldexp(1.0, -bound_of(m) - 1)).to(torch::kDouble).mean().item<double>();
}

void report_rounding_details(const Result& m, lab::Report& r) {
  const Rounding& a = m.a;
  const std::string store = store_name(m);
  r.detail_section(fmt::format("(a) in detail: {}'s spacing, its ties, its bound", store));
  r.observe("added_update", "the update added to w = 1", kSmallUpdate, "", lab::num(kSmallUpdate));
  r.observe("additions", "times it was added", kRepeats);
  r.observe("spacing_at_1", store + " spacing at 1 (measured)", a.spacing, "",
            fmt::format("2^{} = {}", std::log2(a.spacing), lab::sci(a.spacing)));
  const double h = std::log2(a.spacing / 2);
  r.observe("tie_from_even", fmt::format("{}: 1 + 2^{}", store, h), a.tie_even, "",
            fmt::format("{:.6f}", a.tie_even));
  r.observe("tie_from_odd", fmt::format("{}: (1 + 2^{}) + 2^{}", store, h + 1, h), a.tie_odd, "",
            fmt::format("{:.6f}", a.tie_odd));
  const int rule = a.rule;
  const std::string low = lab::short_name(m.low);
  r.observe("bound_kept", low + " keeps an update of w x", std::ldexp(1.0, -rule), "",
            fmt::format("2^-{}", rule));
  r.observe("bound_lost", low + " loses an update of w x", std::ldexp(1.0, -rule - 1), "",
            fmt::format("2^-{}", rule + 1));
  r.observe("lost_at_rule", fmt::format("lost at 2^-{} of the weight", rule), a.lost[1] * 100, "%");
  r.observe("lost_between", fmt::format("lost at 2^-{} of the weight", rule + 0.5), a.lost[2] * 100, "%");
  r.observe("lost_below_rule", fmt::format("lost at 2^-{} of the weight", rule + 1), a.lost[3] * 100, "%");
}

void report_training_details(const Result& m, lab::Report& r) {
  const std::string store = store_name(m), low = lab::short_name(m.low);
  r.detail_section(fmt::format("(b) in detail: a {}-{}-{} MLP; where its updates sit against the bound", kIn,
                               kHidden, kOut));
  r.observe("lost_share_16bit", "mean share lost per step, pure " + store, mean(m.pure.lost) * 100, "%");
  r.observe("lost_share_master", "mean share lost per step, master weights", mean(m.master.lost) * 100, "%");
  r.observe("final_loss_fp32", "final loss fp32", m.fp32.final_loss, "", lab::sci(m.fp32.final_loss));
  const double ratio_pure = m.pure.final_loss / m.fp32.final_loss;
  const double ratio_master = m.master.final_loss / m.fp32.final_loss;
  r.observe("loss_ratio_16bit", "final loss pure " + low + " / fp32", ratio_pure, "x",
            fmt::format("{:.3f}x", ratio_pure));
  r.observe("loss_ratio_master", "final loss master weights / fp32", ratio_master, "x",
            fmt::format("{:.4f}x", ratio_master));
  const int bound = bound_of(m);
  r.chart(lab::log2_histogram(
      fmt::format("|lr x grad| / |weight| of all {} updates of the fp32 run", m.ratios.numel()), m.ratios,
      /*lo=*/-bound - 7, /*hi=*/-bound + 5, /*step=*/1,
      {{-bound, fmt::format("{}: kept from 2^-{} up", store, bound)},
       {-bound - 1, fmt::format("{}: depends on the mantissa", store)},
       {-bound - 2, fmt::format("{}: lost below 2^-{}", store, bound + 1)}},
      /*bar_width=*/24));
  r.observe("updates_below_bound", fmt::format("updates below 2^-{} of their weight", bound + 1),
            below_bound(m) * 100, "%");
  r.observe("updates_above_bound", fmt::format("updates above 2^-{} of their weight", bound),
            (m.ratios > std::ldexp(1.0, -bound)).to(torch::kDouble).mean().item<double>() * 100, "%");
  if (m.master.skipped > 0)
    r.note(fmt::format("the GradScaler skipped {} overflowing step(s); left out of the shares",
                       m.master.skipped));
}

void report_checks(const Result& m, lab::Report& r) {
  const Rounding& a = m.a;
  const std::string low = lab::short_name(m.low), store = store_name(m);
  const int rule = a.rule;
  r.check("lost-below-bound",
          fmt::format("{}: w = 1 ignores {} updates (fp32 moves); 2^-{} of w is lost (>99%), 2^-{} kept (<1% "
                      "lost), in between it depends on the mantissa; ties round to even",
                      store, kSmallUpdate, rule + 1, rule),
          a.w_store == 1.0 && a.w_fp32 > 1.005 && a.lost[3] > 0.99 && a.lost[1] < 0.01 && a.lost[2] > 0.01 &&
              a.lost[2] < 0.99 && a.tie_even == 1.0 && a.tie_odd == 1.0 + 2 * a.spacing,
          fmt::format(
              "w = {:.6f} (fp32 {:.6f}); lost {} at 2^-{}, {} at 2^-{}, {} at 2^-{}; ties: {:.6f}, {:.6f}",
              a.w_store, a.w_fp32, lab::percent(a.lost[3]), rule + 1, lab::percent(a.lost[2]), rule + 0.5,
              lab::percent(a.lost[1]), rule, a.tie_even, a.tie_odd));
  const int bound = bound_of(m);
  const double below = below_bound(m);
  r.check("updates-below-bound",
          fmt::format("most of the run's updates (> {}) are below {}'s loss bound 2^-{}",
                      lab::percent(kLostLarge, 0), store, bound + 1),
          below > kLostLarge, fmt::format("{} below 2^-{}", lab::percent(below), bound + 1));
  const double lost_pure = mean(m.pure.lost), ratio_pure = m.pure.final_loss / m.fp32.final_loss;
  r.check("pure-16bit-loses-updates",
          fmt::format("pure {} loses > {} of its updates and ends >= {}x fp32's loss", store,
                      lab::percent(kLostLarge, 0), kWorseRatio),
          lost_pure > kLostLarge && ratio_pure >= kWorseRatio,
          fmt::format("mean {} lost per step; loss {} vs {} ({:.3f}x)", lab::percent(lost_pure),
                      lab::sci(m.pure.final_loss), lab::sci(m.fp32.final_loss), ratio_pure));
  const double master_max =
      m.master.lost.empty() ? 1.0 : *std::max_element(m.master.lost.begin(), m.master.lost.end());
  const double ratio_master = m.master.final_loss / m.fp32.final_loss;
  r.check("master-weights-track-fp32",
          fmt::format("fp32 master weights under {} autocast lose < {} at every step and end within {} of "
                      "fp32's loss",
                      low, lab::percent(kMasterMaxLost, 0), lab::percent(kTrackTol, 0)),
          master_max < kMasterMaxLost && std::abs(ratio_master - 1.0) < kTrackTol,
          fmt::format("worst step {} (fp32 itself: {} mean); loss {:.4f}x fp32's",
                      lab::percent(master_max, 2), lab::percent(mean(m.fp32.lost), 2), ratio_master));
  r.takeaway(fmt::format(
      "{} keeps an update of 2^-{} of the weight, loses one of 2^-{}, and in between it depends on the "
      "weight's mantissa; fp32's bound is 2^-{}, so fp32 master weights lost {} of the updates per step "
      "(fp32 itself {})",
      store, rule, rule + 1, m.fp32_bound, lab::percent(mean(m.master.lost), 2),
      lab::percent(mean(m.fp32.lost), 2)));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes(lab::short_name(m.low),
           fmt::format("{} storage and autocast{}, fp32 master weights", lab::short_name(m.low),
                       m.low == torch::kHalf ? " (+ GradScaler)" : ""));
  if (m.ctx.flip) r.note("FLIP: the 16-bit weights are stored in fp32, so no update can be lost");
  report_rounding(m, r);
  report_training(m, r);
  report_rounding_details(m, r);
  report_training_details(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
