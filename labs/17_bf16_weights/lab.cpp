// Lab 17: bf16 weights without an fp32 master copy (quiz question 17). The AMP code is in amp.cpp.
//
// Lab 01's lost small updates, in bf16: 8 significant bits, so a weight in [1, 2) moves only in steps of
// 2^-7 = 0.0078, and an update below half of that is rounded away when it is added to the weight. One
// small training run (a linear regression fine-tuned from near its teacher with plain SGD, whose step-0
// updates are a median 0.058 of bf16's spacing at their weight at seed 0, the observation update_to_spacing)
// is trained six ways from the same bf16 start:
//   fp32 weights (the yardstick), pure bf16 (gradient, update and weights in bf16, round to nearest),
//   bf16 weights with the fp32 gradient and update (still rounded to nearest when added), bf16 weights
//   with an fp32 master copy, and two ways without one (Zamirai et al. 2020, arXiv 2010.06192):
//   stochastic rounding of each sum (torchao.optim's _AdamW(..., bf16_stochastic_round=True)) and Kahan
//   summation with a bf16 compensation buffer; and, for the quiz, bf16 weights rounded to nearest at 10x
//   the learning rate (their updates replayed from an fp32 run at that rate).
// Each run's gradient is computed in fp32 from the weights as stored. Each run trains from the start for
// its final float64 loss against fp32's and the bytes per parameter it keeps between steps, counted by the
// allocator (lab::allocated_bytes) around the making of its state and every update step: what is still
// allocated after the last step (weights, master copy or compensation, optimizer state: plain SGD keeps
// none; and whatever the update code keeps for itself, or rebinds the state to). Then the fp32 run's own
// updates u are replayed onto each kind of weight (a fixed sequence, so a rounding's noise cannot feed back
// into the updates): the share of the summed update the net move lost, 1 - sum(move x U) / sum(U x U) with U
// each weight's summed updates (0: all kept, also on average; 1: all lost), and the share of steps that left
// a weight unchanged (as lab 01 counts: stochastic rounding and Kahan leave most weights unchanged at any one
// step and still keep the update). Last it draws stochastic rounding 4096 times: its mean matches the fp32
// value within a few binomial sigmas, in three binades, and over 64 repeated adds the draws' spread is the
// independent binomial's; and it checks that the rounding draws from the generator the lab hands in (these
// draws, which judge stochastic_update, are in judge.cpp).
// And any LibTorch optimizer on bf16 weights: amp.cpp's training loop, AdamW through amp::Bf16Step on
// a bf16 Linear from zero weights, must bring its loss below 5% of its first.
//
// Run:  build/bin/lab17_bf16_weights [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the lab is about bf16)
// --flip: the "stochastic" and "Kahan" updates become plain round-to-nearest bf16 adds: they lose the
//         updates as pure bf16 does, and the draws are all the nearest neighbour, so checks
//         stochastic-tracks-fp32, kahan-tracks-fp32, stochastic-unbiased, stochastic-draws-independent and
//         stochastic-uses-generator fail.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/Context.h>
#include <fmt/format.h>

#include "amp.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

namespace judge = lab17::judge;
using judge::kDraws, judge::kRepeats, judge::kRepeatFraction;  // the draws' sizes (judge.cpp)

constexpr int64_t kIn = 64;            // input features
constexpr int64_t kOut = 16;           // outputs: kIn x kOut = 1024 weights
constexpr int64_t kSamples = 256;      // one full batch of fixed data
constexpr double kMinWeight = 0.5;     // teacher weights' magnitudes uniform in [0.5, 2): bf16 spacing
constexpr double kMaxWeight = 2.0;     // 2^-8 or 2^-7 there
constexpr double kPerturb = 0.05;      // start = teacher + N(0, 0.05^2): fine-tuning, small updates
constexpr double kNoise = 0.2;         // target noise: fp32's loss ends near its 0.04
constexpr double kLr = 0.08;           // SGD; step 0's median update: 0.058 of the spacing (seed 0)
constexpr double kLargeLr = 10 * kLr;  // the quiz's "larger learning rate": round to nearest at 10x
constexpr int64_t kSteps = 400;        // SGD steps per run
constexpr int64_t kStepsQuick = 200;   // ... in quick mode
constexpr double kSigmas = 5;          // mean over draws within 5 binomial sigmas of the fp32 value
constexpr double kSpreadMin = 0.8;     // repeated adds: spread / independent binomial's spread in
constexpr double kSpreadMax = 1.25;    // [0.8, 1.25] (4096 copies estimate it to about 1%)
constexpr double kMostLost = 0.5;      // pure bf16: more than half of the update lost
constexpr double kWorse = 2.0;         // pure bf16: final loss at least 2x fp32's
constexpr double kKeptLost = 0.10;     // stochastic rounding, Kahan: at most 10% lost (replay noise ~2%)
constexpr double kTrackTol = 0.10;     // ... and final loss within 10% of fp32's
constexpr double kMasterLost = 0.01;   // fp32 master copy: at most 1% lost ...
constexpr double kMasterTol = 0.05;    // ... and final loss within 5% of fp32's
constexpr double kAdamLr = 0.05;       // amp::Bf16Step(AdamW) on bf16 weights from zero (amp.cpp)
constexpr double kAdamDrop = 0.05;     // ... its last loss below 5% of its first

// ---- measure -----------------------------------------------------------------------------------------

enum class Way { Fp32, PureBf16, Fp32Grad, Master, Stochastic, Kahan, LargeLr };
constexpr int kWays = 7;

struct Problem {
  torch::Tensor xtx, xty;  // the fp32 gradient is xtx @ w - xty (MSE over samples and outputs)
  torch::Tensor x64, y64;  // for the float64 loss
  torch::Tensor start;     // fp32, bf16-representable: every run starts here
};

Problem make_problem(const lab::Context& ctx) {
  const auto opt = torch::dtype(torch::kFloat).device(ctx.device);
  const auto mag = torch::rand({kIn, kOut}, opt) * (kMaxWeight - kMinWeight) + kMinWeight;
  const auto teacher = mag * (torch::randint(0, 2, {kIn, kOut}, opt) * 2 - 1);
  const auto x = torch::randn({kSamples, kIn}, opt);
  const auto y = x.matmul(teacher) + kNoise * torch::randn({kSamples, kOut}, opt);
  const auto start = teacher + kPerturb * torch::randn({kIn, kOut}, opt);
  const double c = 2.0 / (kSamples * kOut);  // d/dw of mean((xw - y)^2)
  return {c * x.t().matmul(x), c * x.t().matmul(y), x.to(torch::kDouble), y.to(torch::kDouble),
          start.to(torch::kBFloat16).to(torch::kFloat)};
}

double loss64(const Problem& p, const torch::Tensor& w) {
  return (p.x64.matmul(w.to(torch::kDouble)) - p.y64).pow(2).mean().item<double>();
}

// A run's state between steps. `tracked` is what the model is: the master copy when there is one.
struct State {
  torch::Tensor w, master, comp;
  torch::Tensor& tracked() { return master.defined() ? master : w; }
};

State make_state(const Problem& p, Way way) {
  State s;
  const auto dtype = way == Way::Fp32 ? torch::kFloat : torch::kBFloat16;
  s.w = p.start.to(dtype, /*non_blocking=*/false, /*copy=*/true);
  if (way == Way::Master) s.master = p.start.clone();
  if (way == Way::Kahan) s.comp = torch::zeros_like(s.w);
  return s;
}

// bf16(fp32(w) + u), rounded to nearest: what the flipped lab does for "stochastic" and "Kahan".
void nearest_add(torch::Tensor& w, const torch::Tensor& u) {
  w.copy_(w.to(torch::kFloat) + u);
}

struct Run {
  double lost = 0;       // share of the intended update that did not reach the weights
  double unchanged = 0;  // share of (weight, step) pairs with an update asked that left the weight as it was
  double loss = 0;       // final float64 loss
  double bytes = 0;      // per parameter, kept between steps (the allocator's count)
};

struct Updater {
  bool flip = false;
  at::Generator gen;
  void apply(Way way, State& s, const torch::Tensor& u, const torch::Tensor& g) {
    if (way == Way::Fp32) s.w.add_(u);
    if (way == Way::PureBf16) s.w.add_(g.to(torch::kBFloat16) * -kLr);  // the update itself in bf16
    if (way == Way::Fp32Grad || way == Way::LargeLr) nearest_add(s.w, u);
    if (way == Way::Master) lab17::master_update(s.w, s.master, u);
    if (way == Way::Stochastic) flip ? nearest_add(s.w, u) : lab17::stochastic_update(s.w, u, gen);
    if (way == Way::Kahan) flip ? nearest_add(s.w, u) : lab17::kahan_update(s.w, s.comp, u);
  }
};

// Trains from the start: the final loss and the bytes kept. Records fp32's updates when `updates` is given.
// The bytes: what the allocator still holds after the last step, of what the state's making and the steps
// allocated (a buffer the update code keeps to itself, or a state tensor it rebinds, counts), less the
// recorded updates.
Run train(const Problem& p, Way way, int64_t steps, Updater& up,
          std::vector<torch::Tensor>* updates = nullptr, double lr = kLr) {
  State s;
  const auto kept = lab::allocated_bytes(p.start.device(), [&] {
    s = make_state(p, way);
    for (int64_t i = 0; i < steps; ++i) {
      const auto g = p.xtx.matmul(s.w.to(torch::kFloat)) - p.xty;  // from the weights the model reads
      const auto u = -(way == Way::LargeLr ? kLargeLr : lr) * g;
      if (updates) updates->push_back(u);
      up.apply(way, s, u, g);
    }
  });
  const int64_t bytes = kept.retained - (updates ? lab::tensor_bytes(*updates) : 0);
  return {.loss = loss64(p, s.tracked()), .bytes = double(bytes) / p.start.numel()};
}

// Replays fp32's updates (a fixed sequence, so a rounding's noise cannot feed back into them) onto this
// way's weights: the share of the summed update the net move of the weights the model reads lost, projected
// (0 when every update arrived, also on average; 1 when none did), and the share of (weight, step) pairs a
// step left unchanged (the master copy's, with one).
void replay(const Problem& p, Way way, const std::vector<torch::Tensor>& updates, Updater& up, Run& run) {
  State s = make_state(p, way);
  const auto acc = torch::dtype(torch::kDouble).device(p.start.device());
  torch::Tensor intended = torch::zeros(p.start.sizes(), acc), unchanged = torch::zeros({}, acc);
  for (const auto& u : updates) {
    const auto before = s.tracked().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
    up.apply(way, s, u, -u / (way == Way::LargeLr ? kLargeLr : kLr));
    intended += u.to(torch::kDouble);
    unchanged += ((u != 0) & (s.tracked().to(torch::kFloat) == before)).sum();
  }
  // The weights the model reads (with a master copy, its bf16 copy): what reached them.
  const auto moved = s.w.to(torch::kDouble) - p.start.to(torch::kDouble);
  run.lost = 1 - ((moved * intended).sum() / intended.pow(2).sum()).item<double>();
  const int64_t asked = p.start.numel() * static_cast<int64_t>(updates.size());
  run.unchanged = unchanged.item<double>() / static_cast<double>(asked);
}

// bf16's spacing at |w| (normal range): 2^(floor(log2 |w|) - 7).
torch::Tensor spacing(const torch::Tensor& w) {
  return torch::exp2(torch::floor(torch::log2(w.to(torch::kFloat).abs())) - 7);
}

void update(Updater& up, torch::Tensor& w, const torch::Tensor& u) {
  up.flip ? nearest_add(w, u) : lab17::stochastic_update(w, u, up.gen);
}

struct Result {
  lab::Context ctx;
  int64_t steps = 0, params = 0;
  double update_to_spacing = 0;  // step 0: median |update| / bf16's spacing at the weight
  std::array<Run, kWays> runs{};
  judge::Draws draws;                      // stochastic_update drawn many times (judge.cpp)
  double adamw_first = 0, adamw_last = 0;  // amp.cpp's train_bf16_adamw: the first and last step's loss
  const Run& run(Way way) const { return runs[static_cast<int>(way)]; }
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .steps = ctx.size(kSteps, kSteps, kStepsQuick)};
  const Problem p = make_problem(ctx);
  m.params = p.start.numel();
  const auto u0 = -kLr * (p.xtx.matmul(p.start) - p.xty);
  m.update_to_spacing = (u0.abs() / spacing(p.start)).median().item<double>();
  Updater up{.flip = ctx.flip, .gen = at::globalContext().defaultGenerator(ctx.device).clone()};
  up.gen.set_current_seed(ctx.seed);
  std::vector<torch::Tensor> updates, large;  // the fp32 runs' updates, at kLr and at kLargeLr
  for (int i = 0; i < kWays; ++i)
    m.runs[i] = train(p, static_cast<Way>(i), m.steps, up, i == 0 ? &updates : nullptr);
  train(p, Way::Fp32, m.steps, up, &large, kLargeLr);  // only its updates are used: LargeLr replays them
  for (int i = 0; i < kWays; ++i)
    replay(p, static_cast<Way>(i), static_cast<Way>(i) == Way::LargeLr ? large : updates, up, m.runs[i]);
  m.draws = judge::measure_draws([&](torch::Tensor& w, const torch::Tensor& u) { update(up, w, u); }, up.gen,
                                 ctx.device);
  // Any LibTorch optimizer on bf16 weights, no master copy: amp.cpp's loop, AdamW from zero weights.
  torch::nn::Linear model(torch::nn::LinearOptions(kIn, kOut).bias(false));
  {
    torch::NoGradGuard no_grad;
    model->weight.zero_();
  }
  model->to(ctx.device, torch::kBFloat16);
  const torch::Tensor losses = lab17::train_bf16_adamw(
      model, p.x64.to(torch::kBFloat16), p.y64.to(torch::kBFloat16), m.steps, kAdamLr, ctx.seed);
  m.adamw_first = losses[0].item<double>();
  m.adamw_last = losses[-1].item<double>();
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

struct WayText {
  const char* key;
  const char* label;
  const char* short_label;  // in the details
};
constexpr std::array<WayText, kWays> kWayText = {
    {{"fp32", "fp32 weights (the yardstick)", "fp32"},
     {"pure", "pure bf16: gradient, update, weights", "pure bf16"},
     {"fp32_grad", "bf16 weights, fp32 gradient and update", "fp32 gradient and update"},
     {"master", "bf16 weights + fp32 master copy", "master copy"},
     {"stochastic", "bf16 weights, stochastic rounding", "stochastic rounding"},
     {"kahan", "bf16 weights, Kahan compensation", "Kahan"},
     {"large_lr", "bf16 weights, fp32 update, 10x lr", "10x lr"}}};

// A share as a percentage, without printing a rounding's -0.0%.
std::string share(double x) {
  return lab::percent(std::abs(x) < 5e-4 ? 0.0 : x);
}

std::string way_label(const Result& m, Way way) {
  const int i = static_cast<int>(way);
  const bool quoted = m.ctx.flip && (way == Way::Stochastic || way == Way::Kahan);
  return quoted ? fmt::format("\"{}\" (FLIP: round to nearest)", kWayText[i].label) : kWayText[i].label;
}

double ratio(const Result& m, Way way) {
  return m.run(way).loss / m.run(Way::Fp32).loss;
}

// A run on one line: the share of the update lost, the final loss against fp32's, the bytes it keeps.
void observe_run(const Result& m, Way way, lab::Report& r) {
  const Run& run = m.run(way);
  r.observe("lost_share_" + std::string(kWayText[static_cast<int>(way)].key), way_label(m, way),
            100 * run.lost, "%",
            fmt::format("{} lost, {:.2f}x, {:g} B", share(run.lost), ratio(m, way), run.bytes));
}

// The same run's loss ratio and bytes as numbers of their own (quiz.yaml's placeholders), and how many
// (weight, step) pairs a step left unchanged.
void observe_run_details(const Result& m, Way way, lab::Report& r) {
  const Run& run = m.run(way);
  const std::string key = kWayText[static_cast<int>(way)].key;
  const bool quoted = m.ctx.flip && (way == Way::Stochastic || way == Way::Kahan);
  const std::string name = kWayText[static_cast<int>(way)].short_label;
  r.observe("loss_ratio_" + key, (quoted ? "\"" + name + "\"" : name) + ": loss / fp32's", ratio(m, way), "x",
            fmt::format("{:.3f}x", ratio(m, way)));
  r.observe("bytes_" + key, "    bytes per parameter", run.bytes, " B", fmt::format("{:g} B", run.bytes));
  r.observe("unchanged_share_" + key, "    weights a step left unchanged", 100 * run.unchanged, "%",
            share(run.unchanged));
}

void report_runs(const Result& m, lab::Report& r) {
  const Run& fp32 = m.run(Way::Fp32);
  r.section(fmt::format("{} SGD steps (lr {}) on {} weights: update lost, loss x fp32's, bytes kept", m.steps,
                        kLr, m.params));
  r.observe("update_to_spacing", "step 0: median |update| / bf16's gap at the weight", m.update_to_spacing,
            "", fmt::format("{:.3f}", m.update_to_spacing));
  r.observe("final_loss_fp32", way_label(m, Way::Fp32), fp32.loss, "",
            fmt::format("loss {}, {:g} B", lab::sci(fp32.loss), fp32.bytes));
  for (Way way : {Way::PureBf16, Way::Fp32Grad, Way::Master}) observe_run(m, way, r);
  r.note("lost: fp32's updates U replayed, 1 - (move . U) / |U|^2; bytes kept: the allocator's count");

  r.detail_section("bf16 weights without a master copy, and a larger learning rate: the same run");
  for (Way way : {Way::Stochastic, Way::Kahan, Way::LargeLr}) observe_run(m, way, r);
  r.note(
      "the final loss: each run trained from the same start, in float64; plain SGD keeps no optimizer "
      "state (Adam's two fp32 moments would add 8 B to every run)");
  r.detail_section("Each run's numbers");
  for (int i = 0; i < kWays; ++i) observe_run_details(m, static_cast<Way>(i), r);
}

void report_draws(const Result& m, lab::Report& r) {
  const judge::Draws& d = m.draws;
  const std::string sr = m.ctx.flip ? "\"stochastic rounding\"" : "stochastic rounding";
  r.detail_section(fmt::format("{}, drawn {} times", sr, kDraws));
  r.observe("sr_mean_error_sigmas", "worst |mean - fp32 value| over 4 cases, in binomial sigmas",
            d.worst_sigmas, "", fmt::format("{:.2f}", d.worst_sigmas));
  r.observe("sr_away_bias", "    the largest mean error, in gaps, away from zero", d.away_bias, "",
            fmt::format("{:+.3f}", d.away_bias));
  r.observe("sr_least_spread", "    the least spread of one case's draws, in gaps", d.least_spread, "",
            fmt::format("{:.3f}", d.least_spread));
  r.observe("sr_generator_used", "a call advanced the generator handed in", d.generator_used ? 1 : 0, "",
            d.generator_used ? "yes" : "no");
  r.observe("sr_repeat_moved",
            fmt::format("{} adds of {} spacing to 1: mean steps moved", kRepeats, kRepeatFraction),
            d.repeat_moved, "",
            fmt::format("{:.3f} (expected {:g})", d.repeat_moved, kRepeats * kRepeatFraction));
  r.observe("sr_spread_ratio", "    their spread / the independent binomial's", d.spread_ratio, "x",
            fmt::format("{:.3f}x", d.spread_ratio));
}

std::string lost_and_ratio(const Run& run, double base) {
  return fmt::format("{} of the update lost, {:.3f}x fp32's loss", share(run.lost), run.loss / base);
}

void report_checks(const Result& m, lab::Report& r) {
  const double base = m.run(Way::Fp32).loss;
  const Run &pure = m.run(Way::PureBf16), &master = m.run(Way::Master);
  const Run &sr = m.run(Way::Stochastic), &kahan = m.run(Way::Kahan);
  // Catches a run whose updates are not small next to bf16's spacing: then there is nothing to rescue.
  r.check("pure-bf16-loses-updates", "pure bf16 loses most of the update and ends worse than fp32",
          pure.lost >= kMostLost && pure.loss / base >= kWorse,
          fmt::format("{} (need >= {} lost, >= {}x)", lost_and_ratio(pure, base), lab::percent(kMostLost, 0),
                      kWorse));
  // Catches a master copy not updated in fp32, or not copied back to the bf16 weights the model reads
  // (their net move is what "lost" measures): the usual recipe must track fp32.
  r.check("master-tracks-fp32", "the fp32 master copy keeps the update and tracks fp32",
          std::abs(master.lost) <= kMasterLost && std::abs(master.loss / base - 1) <= kMasterTol,
          fmt::format("{} (need <= {}, within {})", lost_and_ratio(master, base),
                      lab::percent(kMasterLost, 0), lab::percent(kMasterTol, 0)));
  auto tracks = [&](const Run& run) {
    return std::abs(run.lost) <= kKeptLost && std::abs(run.loss / base - 1) <= kTrackTol;  // NaN fails both
  };
  const std::string need =
      fmt::format(" (need |lost| <= {}, within {})", lab::percent(kKeptLost, 0), lab::percent(kTrackTol, 0));
  // Catch an update rounded to nearest where it should be rounded stochastically or compensated.
  r.check("stochastic-tracks-fp32", "stochastic rounding keeps the update and tracks fp32", tracks(sr),
          lost_and_ratio(sr, base) + need);
  r.check("kahan-tracks-fp32", "Kahan compensation keeps the update and tracks fp32", tracks(kahan),
          lost_and_ratio(kahan, base) + need);
  // Catches a state that is not what the method needs: a master copy kept after all, a buffer of fp32 kept
  // by the update code to itself, a compensation rebound to an fp32 tensor by assignment (the allocator's
  // count after the last step).
  r.check("no-master-fewer-bytes", "stochastic rounding and Kahan keep fewer bytes than the master copy",
          sr.bytes < master.bytes && kahan.bytes < master.bytes,
          fmt::format("{:g} B and {:g} B per parameter against {:g} B", sr.bytes, kahan.bytes, master.bytes));
  const judge::Draws& d = m.draws;
  // Catches a biased rounding (to nearest, truncation, the update rounded before the add).
  r.check("stochastic-unbiased", "stochastic rounding's mean over draws matches the fp32 value",
          d.worst_sigmas <= kSigmas,
          fmt::format("worst {:.2f} binomial sigmas over {} draws (need <= {:g})", d.worst_sigmas, kDraws,
                      kSigmas));
  // Catches a rounding that draws from another generator than the one handed in (the global one, a new
  // one): the run would not repeat from its seed, and the draws are not the lab's.
  r.check("stochastic-uses-generator", "stochastic rounding draws from the generator the lab hands in",
          d.generator_used, d.generator_used ? "a call advanced it" : "a call left it as it was");
  // Catches draws that repeat from call to call (a generator re-seeded each step) or no randomness at all.
  r.check("stochastic-draws-independent", "repeated stochastic adds spread as independent draws do",
          d.spread_ratio >= kSpreadMin && d.spread_ratio <= kSpreadMax,
          fmt::format("spread {:.3f}x the binomial's after {} adds (need {} to {})", d.spread_ratio, kRepeats,
                      kSpreadMin, kSpreadMax));
  // Catches a training loop whose optimizer step does not reach the bf16 weights (or rounds it away).
  r.check("bf16-step-trains", "AdamW through amp::Bf16Step trains the bf16 weights",
          m.adamw_last < kAdamDrop * m.adamw_first,
          fmt::format("loss {} -> {} (need below {} of the first)", lab::sci(m.adamw_first),
                      lab::sci(m.adamw_last), lab::percent(kAdamDrop, 0)));
  r.takeaway(fmt::format(
      "bf16 keeps 8 significant bits, so an update of {:.2f} of the gap rounds away; rounding the sum "
      "stochastically keeps it on average at {:g} B per weight, a Kahan residue at {:g} B, a master copy at "
      "{:g} B",
      m.update_to_spacing, sr.bytes, kahan.bytes, master.bytes));
}

void report(const Result& m, lab::Report& r) {
  r.dtypes("bf16", "bf16 weights (fp32: the yardstick), fp32 updates, float64 losses");
  if (m.ctx.flip) r.note("FLIP: the \"stochastic\" and \"Kahan\" updates are round-to-nearest bf16 adds");
  report_runs(m, r);
  report_draws(m, r);
  r.detail_section("Any LibTorch optimizer on bf16 weights: amp::Bf16Step around AdamW (amp.cpp)");
  r.observe("bf16_step_adamw_loss",
            fmt::format("{} AdamW steps (lr {}) from zero weights: last loss", m.steps, kAdamLr),
            m.adamw_last, "", fmt::format("{} (first {})", lab::sci(m.adamw_last), lab::sci(m.adamw_first)));
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
