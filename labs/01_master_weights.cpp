// Lab 01: FP32 master weights keep the tiny updates that 16-bit storage rounds away (quiz question 1).
//
// The question is about FP16, so the lab runs fp16 unless --dtype names a type (--dtype bf16: bf16).
// (a) w = 1 in 16 bits plus 100 updates of 1e-4 stays 1 (fp16's spacing at 1 is 2^-10, bf16's 2^-7); in
//     fp32 it moves to 1.01. The bound: fp16 keeps an update larger than 2^-11 of the weight, loses one
//     smaller than 2^-12, in between it depends on the weight's mantissa (bf16: 2^-8, 2^-9); an exact tie
//     rounds to even. The paper's "smaller than 2^-11 of its weight is lost" is the band's upper end.
// (b) A seeded teacher-student regression, fine-tuned from near the teacher (updates small next to the
//     weights), trained with SGD in fp32; in pure 16-bit (weights stored and updated in 16 bits); and
//     under autocast with fp32 master weights (+ amp::GradScaler for fp16). Per step: the share of
//     updates (grad != 0) that left the stored weight unchanged; final losses in float64. A log2
//     histogram of |lr x grad| / |weight| over the fp32 run's updates, bound marked: the paper's figure.
//
// Run alone:  build/bin/lab01_master_weights [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--flip]
// --flip: the "16-bit" storage is fp32 instead (in (a) and for the pure run in (b)): nothing is rounded
//         away, and fp32's bound (2^-24) lies below the run's updates, so the lost-update checks fail.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

constexpr double kTinyUpdate = 1e-4;    // (a) the update added to w = 1
constexpr int kRepeats = 100;           // (a) how many times it is added
constexpr int64_t kRuleSamples = 100000;  // (a) random weights per update/weight ratio
constexpr int64_t kIn = 16;             // model input features
constexpr int64_t kHidden = 64;         // hidden units (tanh)
constexpr int64_t kOut = 4;             // outputs
constexpr int64_t kSamples = 256;       // one full batch of fixed data
constexpr double kInitRange = 1.5;      // teacher weights uniform in [-1.5, 1.5]: weights ~1
constexpr double kPerturb = 0.05;       // student = teacher + N(0, 0.05^2): fine-tuning, small updates
constexpr double kLr = 1e-2;            // SGD step; lr * grad is mostly below 2^-11 of the weight
constexpr double kLostLarge = 0.5;      // pure 16-bit: mean lost share above this is "large"
constexpr double kWorseRatio = 1.5;     // pure 16-bit: final loss at least this times fp32's
constexpr double kMasterMaxLost = 0.01; // master weights: lost share stays below 1% at every step
constexpr double kTrackTol = 0.05;      // master weights: final loss within 5% of fp32's

using torch::nn::Sequential;

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

struct Run {
  std::vector<double> lost;  // per step: share of updates (grad != 0) that changed nothing
  std::vector<double> loss;  // float64 loss after selected steps
  double final_loss = 0;
  int skipped = 0;
};

enum class Mode { Fp32, Pure16, Master };

Run train(Mode mode, const Sequential& start, const torch::Tensor& x, const torch::Tensor& y, int64_t steps,
          const std::vector<int64_t>& rows, torch::ScalarType low, torch::ScalarType store, const lab::Context& ctx,
          std::vector<torch::Tensor>* ratios = nullptr) {
  Sequential model = copy_of(start);
  if (mode == Mode::Pure16) model->to(store);  // weights, activations and grads in 16 bits
  const torch::Tensor xin = mode == Mode::Pure16 ? x.to(store) : x;
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler(ctx.device, amp::GradScalerOptions{.enabled = mode == Mode::Master && low == torch::kHalf});
  Run run;
  for (int64_t step = 1; step <= steps; ++step) {
    opt.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast ac(ctx.device, low, /*enabled=*/mode == Mode::Master);
      loss = torch::mse_loss(model->forward(xin).to(torch::kFloat), y);
    }
    scaler.scale(loss).backward();
    if (ratios)  // the update SGD is asked to make, relative to the weight it is added to
      for (const auto& p : model->parameters()) ratios->push_back((p.grad() * kLr).abs().flatten() / p.detach().abs().flatten());
    std::vector<torch::Tensor> before;
    for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
    const bool stepped = scaler.step(opt);
    scaler.update();
    if (!stepped) {
      ++run.skipped;  // an overflow skip is not a rounding loss: leave it out
    } else {
      double changed_nothing = 0, updated = 0;
      auto params = model->parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        auto live = params[i].grad() != 0;  // an update was asked for
        updated += live.sum().item<double>();
        changed_nothing += (live & (params[i].detach() == before[i])).sum().item<double>();
      }
      run.lost.push_back(updated > 0 ? changed_nothing / updated : 0.0);
    }
    if (std::find(rows.begin(), rows.end(), step) != rows.end()) run.loss.push_back(loss64(model, x, y));
  }
  run.final_loss = loss64(model, x, y);
  return run;
}

double mean(const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

lab::Report run(const lab::Context& ctx) {
  lab::Report r("master-weights", "FP32 master weights keep tiny updates");
  const torch::ScalarType low = ctx.dtype_given ? ctx.dtype : torch::kHalf;  // the question's format by default
  const torch::ScalarType store = ctx.flip ? torch::kFloat : low;  // where the "16-bit" weights live
  const std::string low_name = lab::short_name(low);
  const std::string store_name = ctx.flip ? "fp32 (flip)" : low_name;
  r.note(fmt::format("dtypes: fp32 reference and master weights; {} storage and autocast{}; losses compared in fp64{}",
                     low_name, low == torch::kHalf ? " (+ GradScaler)" : " (no scaler)",
                     ctx.dtype_given ? "" : " (fp16 by default; --dtype bf16 for bf16)"));
  if (ctx.flip) r.note("FLIP: the 16-bit weights are stored in fp32, so no update can be rounded away");

  r.section(fmt::format("(a) Rounding: w = 1 plus {} updates of {}", kRepeats, kTinyUpdate));
  double w_after[2];
  for (int k = 0; k < 2; ++k) {
    auto w = torch::ones({}, torch::dtype(k == 0 ? torch::kFloat : store).device(ctx.device));
    for (int i = 0; i < kRepeats; ++i) w.add_(kTinyUpdate);  // stored back in w's own dtype each time
    w_after[k] = w.item<double>();
  }
  r.observe("w_after_fp32", "fp32 w after the updates", w_after[0], "", fmt::format("{:.6f}", w_after[0]));
  r.observe("w_after_16bit", store_name + " w after the updates", w_after[1], "", fmt::format("{:.6f}", w_after[1]));
  const double spacing = spacing_at_one(store);
  r.observe("spacing_at_1", store_name + " spacing at 1 (measured)", spacing, "",
            fmt::format("2^{} = {}", std::log2(spacing), lab::sci(spacing)));
  // Exact ties (an update of half the spacing) round to the neighbour with an even last mantissa bit.
  auto in_store = [&](double a, double b) { return (torch::full({}, a, torch::dtype(store)) + b).item<double>(); };
  const double tie_even = in_store(1.0, spacing / 2), tie_odd = in_store(1.0 + spacing, spacing / 2);
  const double h = std::log2(spacing / 2);
  r.observe("tie_from_even", fmt::format("{}: 1 + 2^{}", store_name, h), tie_even, "", fmt::format("{:.6f}", tie_even));
  r.observe("tie_from_odd", fmt::format("{}: (1 + 2^{}) + 2^{}", store_name, h + 1, h), tie_odd, "", fmt::format("{:.6f}", tie_odd));

  // The rule over random weights (magnitudes 2^-2..2^2, random signs) and random-signed updates.
  const int rule = ctx.flip ? (low == torch::kHalf ? 11 : 8) : static_cast<int>(-std::log2(spacing)) + 1;
  auto mag = torch::exp2(torch::rand({kRuleSamples}, torch::dtype(torch::kFloat).device(ctx.device)) * 4 - 2);
  auto sign = [&] { return torch::randint(0, 2, {kRuleSamples}, mag.options()) * 2 - 1; };
  auto w = (mag * sign()).to(store);
  auto& rt = r.table(fmt::format("{} random weights in {}, each plus ratio x |w|: share left unchanged", kRuleSamples, store_name),
                     {"update / weight", "lost"});
  std::vector<double> lost_at;
  for (double k : {rule - 1.0, double(rule), rule + 0.5, rule + 1.0, rule + 2.0}) {
    auto u = (w.to(torch::kFloat).abs() * std::exp2(-k) * sign()).to(store);
    const double lost = (w + u == w).to(torch::kFloat).mean().item<double>();  // the sum rounded to `store`
    lost_at.push_back(lost);
    rt.row({fmt::format("2^-{:g}", k), lab::percent(lost)});
  }
  r.observe("lost_at_rule", fmt::format("lost at 2^-{} of the weight", rule), lost_at[1] * 100, "%");
  r.observe("lost_between", fmt::format("lost at 2^-{} of the weight", rule + 0.5), lost_at[2] * 100, "%");
  r.observe("lost_below_rule", fmt::format("lost at 2^-{} of the weight", rule + 1), lost_at[3] * 100, "%");
  r.check(fmt::format("{}: w = 1 ignores 1e-4 updates (fp32 moves); 2^-{} of w is lost (>99%), 2^-{} kept (<1% lost), "
                      "in between it depends on the mantissa; ties round to even", low_name, rule + 1, rule),
          w_after[1] == 1.0 && w_after[0] > 1.005 && lost_at[3] > 0.99 && lost_at[1] < 0.01 && lost_at[2] > 0.01 &&
              lost_at[2] < 0.99 && tie_even == 1.0 && tie_odd == 1.0 + 2 * spacing,
          fmt::format("w = {:.6f} (fp32 {:.6f}); lost {} at 2^-{}, {} at 2^-{}, {} at 2^-{}; ties: {:.6f}, {:.6f}",
                      w_after[1], w_after[0], lab::percent(lost_at[3]), rule + 1, lab::percent(lost_at[2]), rule + 0.5,
                      lab::percent(lost_at[1]), rule, tie_even, tie_odd));
  r.takeaway(fmt::format("{} keeps an update larger than 2^-{} of the weight, loses one smaller than 2^-{}, and in between it "
                         "depends on the weight's mantissa; an exact tie rounds to the even neighbour", low_name, rule, rule + 1));

  // (b) Teacher-student regression; the student starts near the teacher (fine-tuning).
  const int64_t steps = ctx.size(300, 600, 100);
  Sequential teacher(torch::nn::Linear(kIn, kHidden), torch::nn::Tanh(), torch::nn::Linear(kHidden, kOut));
  teacher->to(ctx.device);
  torch::Tensor x, y;
  Sequential student = nullptr;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : teacher->parameters()) p.uniform_(-kInitRange, kInitRange);
    x = torch::randn({kSamples, kIn}, torch::device(ctx.device)) / std::sqrt(double(kIn));
    y = teacher->forward(x);
    student = copy_of(teacher);
    for (auto& p : student->parameters()) p.add_(torch::randn_like(p) * kPerturb);
  }
  const std::vector<int64_t> rows = {1, steps / 3, 2 * steps / 3, steps};
  std::vector<torch::Tensor> ratios;
  const Run f32 = train(Mode::Fp32, student, x, y, steps, rows, low, store, ctx, &ratios);
  const Run pure = train(Mode::Pure16, student, x, y, steps, rows, low, store, ctx);
  const Run master = train(Mode::Master, student, x, y, steps, rows, low, store, ctx);

  r.section(fmt::format("(b) {} SGD steps, lr {}, {}-{}-{} tanh MLP, weights ~1, initial loss {}", steps, kLr, kIn,
                        kHidden, kOut, lab::sci(loss64(student, x, y))));
  auto& tt = r.table(fmt::format("Share of updates that changed nothing; fp64 loss (pure: {} weights, master: fp32)",
                                 store_name),
                     {"step", "lost fp32", "lost pure", "lost master", "loss fp32", "loss pure", "loss master"});
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t s = static_cast<size_t>(rows[i] - 1);
    auto at = [&](const Run& run) { return s < run.lost.size() ? lab::percent(run.lost[s]) : "-"; };
    tt.row({std::to_string(rows[i]), at(f32), at(pure), at(master), lab::sci(f32.loss[i]), lab::sci(pure.loss[i]),
            lab::sci(master.loss[i])});
  }
  const double lost_pure = mean(pure.lost), lost_master = mean(master.lost), lost_f32 = mean(f32.lost);
  const double master_max = master.lost.empty() ? 1.0 : *std::max_element(master.lost.begin(), master.lost.end());
  r.observe("lost_share_16bit", "mean share lost per step, pure " + store_name, lost_pure * 100, "%");
  r.observe("lost_share_master", "mean share lost per step, master weights", lost_master * 100, "%");
  r.observe("final_loss_fp32", "final loss fp32", f32.final_loss, "", lab::sci(f32.final_loss));
  const double ratio_pure = pure.final_loss / f32.final_loss, ratio_master = master.final_loss / f32.final_loss;
  r.observe("loss_ratio_16bit", "final loss pure " + low_name + " / fp32", ratio_pure, "x", fmt::format("{:.3f}x", ratio_pure));
  r.observe("loss_ratio_master", "final loss master weights / fp32", ratio_master, "x", fmt::format("{:.4f}x", ratio_master));
  // Where the run's updates sit against the storage format's bound (measured from its spacing at 1).
  const int bound = static_cast<int>(-std::log2(spacing)) + 1;  // fp16 11, bf16 8, fp32 (flip) 24
  const auto all = torch::cat(ratios);
  const double below = (all < std::ldexp(1.0, -bound - 1)).to(torch::kDouble).mean().item<double>();
  const double above = (all > std::ldexp(1.0, -bound)).to(torch::kDouble).mean().item<double>();
  r.chart(lab::log2_histogram(fmt::format("|lr x grad| / |weight| of all {} updates of the fp32 run", all.numel()), all,
                              /*lo=*/-bound - 7, /*hi=*/-bound + 5, /*step=*/1,
                              {{-bound, fmt::format("{}: kept from 2^-{} up", store_name, bound)},
                               {-bound - 1, fmt::format("{}: depends on the mantissa; lost below 2^-{}", store_name, bound + 1)}}));
  r.observe("updates_below_bound", fmt::format("updates below 2^-{} of their weight", bound + 1), below * 100, "%");
  r.observe("updates_above_bound", fmt::format("updates above 2^-{} of their weight", bound), above * 100, "%");
  r.check(fmt::format("most of the run's updates (> {}) are below {}'s loss bound 2^-{}", lab::percent(kLostLarge, 0),
                      store_name, bound + 1),
          below > kLostLarge, fmt::format("{} below 2^-{}, {} above 2^-{}", lab::percent(below), bound + 1,
                                          lab::percent(above), bound));
  if (master.skipped > 0) r.note(fmt::format("GradScaler skipped {} overflowing step(s); left out of the shares", master.skipped));

  r.check(fmt::format("pure {} loses > {} of its updates and ends >= {}x fp32's loss", low_name,
                      lab::percent(kLostLarge, 0), kWorseRatio),
          lost_pure > kLostLarge && ratio_pure >= kWorseRatio,
          fmt::format("mean {} lost per step; loss {} vs {} ({:.3f}x)", lab::percent(lost_pure),
                      lab::sci(pure.final_loss), lab::sci(f32.final_loss), ratio_pure));
  r.check(fmt::format("master weights lose < {} at every step and end within {} of fp32's loss",
                      lab::percent(kMasterMaxLost, 0), lab::percent(kTrackTol, 0)),
          master_max < kMasterMaxLost && std::abs(ratio_master - 1.0) < kTrackTol,
          fmt::format("worst step {} (fp32 itself: {} mean); loss {:.4f}x fp32's", lab::percent(master_max, 2),
                      lab::percent(lost_f32, 2), ratio_master));
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
