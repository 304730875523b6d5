// Lab 16: gradient clipping under AMP, on one process and with the gradients sharded over two ranks (quiz
// question 16). The AMP code is in amp.cpp.
//
// An MLP trains for a few SGD steps under fp16 autocast with an amp::GradScaler, every gradient clipped to a
// 2-norm of kMaxNorm (the clip is active on every step). On one step an inf is planted in the last layer's
// gradient, where an fp16 overflow would put it. Every run is compared with the lab's own reference: the
// same steps in plain fp32 with the clip written out below (norm, factor min(1, max_norm / (norm + 1e-6)),
// w -= lr x factor x g; the inf step skipped), on one process. The runs:
//   after-unscale   one process: amp.cpp's step, unscale_, then amp::clip_grad_norm_sharded with no group;
//   before-unscale  one process: the clip before unscale_, on the scaled gradients (written here);
//   sharded-total   two ranks, ZeRO style (each steps the parameters it owns, then broadcasts them):
//                   amp.cpp's step, the clip factor from the global norm (all-reduced squared shard norms);
//   sharded-own     two ranks: each clips its shard by its own shard's norm (written here).
// Both sharded runs use amp.cpp's make_scaler(..., pg) (amp::found_inf_all_reduce), so an inf in one
// rank's shard skips the step on every rank. The ranks are src/lab/rank_launch.h's (lab::run_ranks).
//
// Run:  build/bin/lab16_gradient_clipping [--quick] [--seed N] [--device cpu|cuda] [--json]
//       It starts the ranks itself, as processes of this executable on 127.0.0.1 (WORLD_SIZE=2..6 for
//       more; torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT for a job of your own, as lab 13).
//       fp16; the lab refuses --dtype.
// --flip: sharded-total clips each shard by its own norm (no process group given to the clip); checks
//         global-clip-matches-reference and global-norm-matches-reference then fail.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/clip.h"
#include "amp/distributed.h"
#include "amp/grad_scaler.h"
#include "lab/libtorch.h"
#include "lab/rank_launch.h"
#include "lab/registry.h"
#include "lab/text.h"

namespace {

using namespace lab16;

constexpr int64_t kSteps = 8, kStepsQuick = 4;       // SGD steps per run
constexpr int64_t kInfStep = 2;                      // the step whose last-layer gradient gets an inf
constexpr int64_t kBatch = 64;                       // the same batch on every rank: the shards' gradients
constexpr int64_t kIn = 16, kHidden = 64, kOut = 8;  // MLP widths; targets tanh(x @ teacher)
constexpr double kLr = 0.5;                          // SGD, no momentum: an update is lr x the clipped grad
constexpr double kMaxNorm = 0.05;                    // the clip's bound, below every step's gradient norm
constexpr double kInitScale = 4096;                  // 2^12: no fp16 overflow but the planted one
constexpr double kRoundingTol = 1e-2;            // fp16 autocast against the fp32 reference: 1% of the update
constexpr double kMeasurable = 0.05;             // a wrong clip moves the update at least 5% of its size
constexpr int kDefaultWorld = 2, kMaxWorld = 6;  // 6 parameter tensors: at most one shard each
constexpr std::chrono::seconds kRunDeadline{120};  // the spawned ranks' whole run

// ---- measure: the problem and the reference ----------------------------------------------------------

torch::nn::Sequential make_mlp(uint64_t seed, torch::Device device) {
  torch::manual_seed(seed);  // the same start on every rank and in every run
  torch::nn::Sequential m(torch::nn::Linear(kIn, kHidden), torch::nn::Tanh(),
                          torch::nn::Linear(kHidden, kHidden), torch::nn::Tanh(),
                          torch::nn::Linear(kHidden, kOut));
  m->to(device);
  return m;
}

struct Batch {
  torch::Tensor x, y;
};

Batch batch_of(uint64_t seed, int64_t step, torch::Device device) {
  torch::manual_seed(seed + 1000);
  const torch::Tensor teacher = torch::randn({kIn, kOut});
  torch::manual_seed(seed + 1 + static_cast<uint64_t>(step));
  const torch::Tensor x = torch::randn({kBatch, kIn});
  return {x.to(device), torch::tanh(x.matmul(teacher)).to(device)};
}

std::vector<float> flat_values(const std::vector<torch::Tensor>& params) {
  std::vector<float> out;
  for (const auto& p : params) {
    const torch::Tensor t = p.detach().flatten().to(torch::kCPU, torch::kFloat).contiguous();
    out.insert(out.end(), t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return out;
}

double grad_norm(const std::vector<torch::Tensor>& params) {
  double sq = 0;
  for (const auto& p : params) sq += p.grad().to(torch::kDouble).square().sum().item<double>();
  return std::sqrt(sq);
}

// What a run leaves: each step's norm (as the step returned it) and clip factor, whether the parameters
// moved (one char per step, '1' or '0'), and the final weights.
struct Trace {
  std::vector<float> norms, factors;
  std::string moved;
  std::vector<float> weights;
};

// The lab's own step, plain fp32, the clip written out; the inf step is skipped, as the recipe must.
Trace reference_run(uint64_t seed, int64_t steps, torch::Device device) {
  torch::nn::Sequential model = make_mlp(seed, device);
  const std::vector<torch::Tensor> params = model->parameters();
  Trace t;
  for (int64_t step = 0; step < steps; ++step) {
    const Batch b = batch_of(seed, step, device);
    model->zero_grad();
    torch::mse_loss(model->forward(b.x), b.y).backward();
    if (step == kInfStep) {
      t.norms.push_back(std::numeric_limits<float>::infinity()), t.factors.push_back(1), t.moved += '0';
      continue;
    }
    const double norm = grad_norm(params), factor = std::min(1.0, kMaxNorm / (norm + 1e-6));
    torch::NoGradGuard no_grad;
    for (const auto& p : params) p.sub_(p.grad() * (kLr * factor));
    t.norms.push_back(static_cast<float>(norm)), t.factors.push_back(static_cast<float>(factor));
    t.moved += '1';
  }
  t.weights = flat_values(params);
  return t;
}

// An inf where an fp16 overflow of the last layer would put it (the scaled gradient of its last bias).
void plant_inf(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  params.back().grad().view(-1)[0].fill_(std::numeric_limits<float>::infinity());
}

bool changed(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& before) {
  bool any = false;
  for (size_t i = 0; i < params.size(); ++i)
    any = any || !torch::equal(params[i].detach().view(torch::kInt32), before[i].view(torch::kInt32));
  return any;
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone());
  return out;
}

float float_of(const torch::Tensor& t) {
  return t.defined() ? t.detach().to(torch::kCPU, torch::kFloat).item<float>() : std::nanf("");
}

// One step's bookkeeping around `step_fn` (which clips and steps `mine`, returning the norm): the factor is
// the clipped true gradients' norm over the unclipped ones' (scaled gradients / the scale before the step).
template <class StepFn>
void traced_step(Trace& t, amp::GradScaler& scaler, const std::vector<torch::Tensor>& mine, StepFn step_fn) {
  const double scale = scaler.get_scale(), before_norm = grad_norm(mine) / scale;
  const std::vector<torch::Tensor> before = clones(mine);
  const torch::Tensor norm = step_fn();
  t.norms.push_back(float_of(norm));
  const double after_norm = grad_norm(mine);
  t.factors.push_back(std::isfinite(before_norm) && before_norm > 0
                          ? static_cast<float>(after_norm / before_norm)
                          : std::numeric_limits<float>::quiet_NaN());
  t.moved += changed(mine, before) ? '1' : '0';
}

// One process: amp.cpp's step (clip after unscale_), or the clip before unscale_ (clip_first).
Trace whole_run(uint64_t seed, int64_t steps, torch::Device device, bool clip_first) {
  torch::nn::Sequential model = make_mlp(seed, device);
  const std::vector<torch::Tensor> params = model->parameters();
  torch::optim::SGD opt(params, torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler = make_scaler(device, kInitScale, /*group=*/{});
  Trace t;
  for (int64_t step = 0; step < steps; ++step) {
    const Batch b = batch_of(seed, step, device);
    forward_backward(model, scaler, b.x, b.y);
    if (step == kInfStep) plant_inf(params);
    traced_step(t, scaler, params, [&] {
      if (!clip_first) return clip_and_step(opt, scaler, params, kMaxNorm, {});
      torch::Tensor norm = amp::clip_grad_norm_sharded(params, kMaxNorm);  // the mistake: scaled gradients
      scaler.step(opt);                                                    // unscales what was clipped
      scaler.update();
      return norm;
    });
  }
  t.weights = flat_values(params);
  return t;
}

// ---- measure: the ranks' runs ------------------------------------------------------------------------

struct RunSetup {  // the same on every rank
  int64_t steps = 0;
  uint64_t seed = 0;
  bool flip = false;
};

// Each owner broadcasts the parameters it stepped, so that every replica is whole for the next forward.
void broadcast_shards(const std::vector<torch::Tensor>& params, const std::vector<int>& owners,
                      const c10::intrusive_ptr<c10d::Backend>& pg) {
  for (int owner = 0; owner < pg->getSize(); ++owner) {
    std::vector<torch::Tensor> shard;
    for (size_t i = 0; i < params.size(); ++i)
      if (owners[i] == owner) shard.push_back(params[i].data());
    std::vector<torch::Tensor> flat{at::flatten_dense_tensors(shard)};
    c10d::BroadcastOptions from_owner;
    from_owner.rootRank = owner;
    pg->broadcast(flat, from_owner)->wait();
    const std::vector<torch::Tensor> received = at::unflatten_dense_tensors(flat[0], shard);
    for (size_t i = 0; i < shard.size(); ++i) shard[i].copy_(received[i]);
  }
}

// One rank's run. global: amp.cpp's step with the process group (--flip: without); local: this rank's
// shard clipped by its own norm, the mistake, written here.
Trace run_on_rank(bool global, const lab::RankSlot& r, const RunSetup& s) {
  const c10::intrusive_ptr<c10d::Backend>& pg = r.group;
  torch::nn::Sequential model = make_mlp(s.seed, r.device);
  const std::vector<torch::Tensor> params = model->parameters();
  std::vector<int> owners;  // contiguous shards: parameter tensor i of n belongs to rank i * world / n
  std::vector<torch::Tensor> mine;
  for (size_t i = 0; i < params.size(); ++i) {
    owners.push_back(static_cast<int>(i * static_cast<size_t>(r.world) / params.size()));
    if (owners.back() == r.rank) mine.push_back(params[i]);
  }
  torch::optim::SGD opt(mine, torch::optim::SGDOptions(kLr));
  amp::GradScaler scaler = make_scaler(r.device, kInitScale, pg);  // amp.cpp's: found_inf all-reduced
  Trace t;
  for (int64_t step = 0; step < s.steps; ++step) {
    const Batch b = batch_of(s.seed, step, r.device);
    forward_backward(model, scaler, b.x, b.y);  // every rank the whole batch: its shard's full gradient
    if (step == kInfStep) plant_inf(params);    // in the last rank's shard
    traced_step(t, scaler, mine, [&] {
      if (global) return clip_and_step(opt, scaler, mine, kMaxNorm, s.flip ? nullptr : pg);
      scaler.unscale_(opt);
      torch::Tensor norm = amp::clip_grad_norm_sharded(mine, kMaxNorm);  // the mistake: no group
      scaler.step(opt);
      scaler.update();
      return norm;
    });
    broadcast_shards(params, owners, pg);
  }
  t.weights = flat_values(params);
  return t;
}

lab::RankValues serve_as_rank(const lab::RankSlot& r, const RunSetup& s) {
  lab::RankValues values;
  for (const bool global : {true, false}) {
    Trace t = run_on_rank(global, r, s);
    const std::string run = global ? "global/" : "local/";
    values.strings[run + "moved"] = std::move(t.moved);
    values.floats[run + "norms"] = std::move(t.norms);
    values.floats[run + "factors"] = std::move(t.factors);
    values.floats[run + "weights"] = std::move(t.weights);
  }
  return values;
}

std::vector<Trace> traces_of(const std::vector<lab::RankValues>& ranks, const std::string& run) {
  std::vector<Trace> out;
  for (const lab::RankValues& v : ranks)
    out.push_back({.norms = v.get_floats(run + "/norms"),
                   .factors = v.get_floats(run + "/factors"),
                   .moved = v.get_string(run + "/moved"),
                   .weights = v.get_floats(run + "/weights")});
  return out;
}

struct Result {
  lab::Context ctx;
  int world = 0;
  int64_t steps = 0;
  std::string where, backend;
  std::vector<float> start;  // the weights before the first step
  Trace reference, whole, clip_first;
  std::vector<Trace> global, local;  // one per rank
};

Result measure(const lab::Context& ctx) {
  const RunSetup setup{.steps = ctx.quick ? kStepsQuick : kSteps, .seed = ctx.seed, .flip = ctx.flip};
  const lab::RanksRun ranks = lab::run_ranks(ctx,
                                             {.lab = "gradient-clipping",
                                              .max_world = kMaxWorld,
                                              .default_world = kDefaultWorld,
                                              .deadline = kRunDeadline},
                                             [&](const lab::RankSlot& r) { return serve_as_rank(r, setup); });
  Result m{
      .ctx = ctx, .world = ranks.world, .steps = setup.steps, .where = ranks.where, .backend = ranks.backend};
  m.start = flat_values(make_mlp(ctx.seed, ctx.device)->parameters());
  m.reference = reference_run(ctx.seed, m.steps, ctx.device);
  m.whole = whole_run(ctx.seed, m.steps, ctx.device, /*clip_first=*/false);
  m.clip_first = whole_run(ctx.seed, m.steps, ctx.device, /*clip_first=*/true);
  m.global = traces_of(ranks.ranks, "global");
  m.local = traces_of(ranks.ranks, "local");
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

// A run's whole update (final - start) against the reference's: |u - u_ref| / |u_ref| and |u| / |u_ref|
// (2-norms in float64). NaN weights give NaN, which passes no check.
struct UpdateVsRef {
  double diff = 0, ratio = 0;
};

UpdateVsRef update_vs_ref(const std::vector<float>& w, const std::vector<float>& start,
                          const std::vector<float>& ref) {
  double dd = 0, uu = 0, rr = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double u = double(w[i]) - start[i], ur = double(ref[i]) - start[i];
    dd += (u - ur) * (u - ur), uu += u * u, rr += ur * ur;
  }
  return {std::sqrt(dd / rr), std::sqrt(uu / rr)};
}

// Over the steps that are not the inf step: the worst |norm / ref norm - 1|, and the mean norm / ref norm.
struct NormVsRef {
  double worst = 0, mean_ratio = 0;
  bool inf_seen = true;  // the inf step's norm is non-finite
};

NormVsRef norm_vs_ref(const Trace& t, const Trace& ref) {
  NormVsRef n;
  int64_t counted = 0;
  for (size_t s = 0; s < ref.norms.size(); ++s) {
    if (static_cast<int64_t>(s) == kInfStep) {
      n.inf_seen = !std::isfinite(t.norms[s]);
      continue;
    }
    const double ratio = t.norms[s] / double(ref.norms[s]);
    n.worst = std::isnan(ratio) ? ratio : std::max(n.worst, std::abs(ratio - 1));
    n.mean_ratio += ratio, ++counted;
  }
  n.mean_ratio /= static_cast<double>(counted);
  return n;
}

// The largest relative gap between the ranks' clip factors on any step but the inf one (0: one factor).
double factor_spread(const std::vector<Trace>& ranks) {
  double worst = 0;
  for (size_t s = 0; s < ranks[0].factors.size(); ++s) {
    if (static_cast<int64_t>(s) == kInfStep) continue;
    double lo = ranks[0].factors[s], hi = lo;
    for (const Trace& t : ranks)
      lo = std::min<double>(lo, t.factors[s]), hi = std::max<double>(hi, t.factors[s]);
    const double gap = hi / lo - 1;
    worst = std::isnan(gap) ? gap : std::max(worst, gap);
  }
  return worst;
}

std::string factors_at(const std::vector<Trace>& ranks, size_t step) {
  std::string s;
  for (const Trace& t : ranks) s += fmt::format("{}{:.3f}", s.empty() ? "" : " and ", t.factors[step]);
  return s;
}

// What the report reads: each run against the reference.
struct Derived {
  UpdateVsRef whole, clip_first, global, local;
  NormVsRef whole_norm, clip_first_norm, global_norm;
  double global_spread = 0, local_spread = 0;
  bool replicas_equal = true, norms_agree = true;
  int64_t inf_moved_ranks = 0,
          clean_kept_ranks = 0;  // global: ranks that moved on the inf step / kept on others
};

Derived derive(const Result& m) {
  Derived d;
  d.whole = update_vs_ref(m.whole.weights, m.start, m.reference.weights);
  d.clip_first = update_vs_ref(m.clip_first.weights, m.start, m.reference.weights);
  d.global = update_vs_ref(m.global[0].weights, m.start, m.reference.weights);
  d.local = update_vs_ref(m.local[0].weights, m.start, m.reference.weights);
  d.whole_norm = norm_vs_ref(m.whole, m.reference);
  d.clip_first_norm = norm_vs_ref(m.clip_first, m.reference);
  d.global_norm = norm_vs_ref(m.global[0], m.reference);
  d.global_spread = factor_spread(m.global);
  d.local_spread = factor_spread(m.local);
  for (const Trace& t : m.global) {
    d.replicas_equal &= t.weights == m.global[0].weights;
    for (size_t s = 0; s < t.norms.size(); ++s) {
      d.norms_agree &=
          std::isnan(t.norms[s]) ? std::isnan(m.global[0].norms[s]) : t.norms[s] == m.global[0].norms[s];
      const bool inf_step = static_cast<int64_t>(s) == kInfStep;
      d.inf_moved_ranks += inf_step && t.moved[s] == '1';
      d.clean_kept_ranks += !inf_step && t.moved[s] == '0';
    }
  }
  return d;
}

std::string pow2(double x) {
  return fmt::format("2^{:g}", std::round(std::log2(x) * 10) / 10);
}

void report_runs(const Result& m, const Derived& d, lab::Report& r) {
  r.dtypes("fp16", "fp16 autocast, fp32 weights and gradients; the reference plain fp32");
  if (m.ctx.flip)
    r.note("FLIP: sharded-total clips each shard by its own norm (the clip gets no process group)");
  r.section(fmt::format("{} SGD steps, gradients clipped to a 2-norm of {}, an inf planted at step {}",
                        m.steps, kMaxNorm, kInfStep));
  r.note(fmt::format("fp16 autocast, GradScaler at {}; reference: fp32, the clip written out",
                     pow2(kInitScale)));
  r.note(fmt::format("sharded: {} ranks (c10d), the 6 parameter tensors in contiguous shards", m.world));
  auto& t = r.table("", {"run", "vs reference", "size x ref", "clip multiplier, step 0"});
  auto row = [&](const char* name, const UpdateVsRef& u, const std::string& factors) {
    t.row({name, lab::sci(u.diff), fmt::format("{:.4g}", u.ratio), factors});
  };
  t.row({"reference", "0", "1", fmt::format("{:.3f}", m.reference.factors[0])});
  row("after-unscale", d.whole, fmt::format("{:.3f}", m.whole.factors[0]));
  row("before-unscale", d.clip_first, fmt::format("{:.3g}", m.clip_first.factors[0]));
  row("sharded-total", d.global, factors_at(m.global, 0));
  row("sharded-own", d.local, factors_at(m.local, 0));
  r.note("vs reference: |u - u_ref| / |u_ref|, size: |u| / |u_ref|; u the weight change");
}

void report_where(const Result& m, lab::Report& r) {
  r.detail_section("Where the ranks ran");
  r.note(fmt::format("{}; {}; lr {}; the parameter tensors w1 b1 w2 b2 w3 b3, contiguous shards", m.backend,
                     m.where, kLr));
  r.note(fmt::format("reference: step 0's norm {:.3f}, factor {:.3f}", m.reference.norms[0],
                     m.reference.factors[0]));
}

void report_numbers(const Result& m, const Derived& d, lab::Report& r) {
  r.detail_section("The runs in numbers");
  r.observe("world", "ranks", m.world);
  r.observe("scale", "the loss scale", kInitScale, "", pow2(kInitScale));
  r.observe("max_norm", "the clip's max_norm", kMaxNorm);
  r.observe("ref_norm_step0", "reference: step 0's gradient norm", m.reference.norms[0]);
  r.observe("ref_factor_step0", "reference: step 0's clip factor", m.reference.factors[0]);
  r.observe("whole_update_diff", "after-unscale: update vs reference", d.whole.diff, "",
            lab::sci(d.whole.diff));
  r.observe("clip_first_update_ratio", "before-unscale: update size / reference's", d.clip_first.ratio, "",
            lab::sci(d.clip_first.ratio));
  const double first_norm_ratio = m.clip_first.norms[0] / double(m.reference.norms[0]);
  r.observe("clip_first_norm_ratio", "before-unscale: step 0's norm clipped by / reference's",
            first_norm_ratio, "", fmt::format("{:.4g}", first_norm_ratio));
  r.observe("clip_first_factor_step0", "before-unscale: step 0's factor on the true gradients",
            m.clip_first.factors[0], "", lab::sci(m.clip_first.factors[0]));
  r.observe("global_update_diff", "sharded-total: update vs reference", d.global.diff, "",
            lab::sci(d.global.diff));
  r.observe("global_update_ratio", "sharded-total: update size / reference's", d.global.ratio, "",
            fmt::format("{:.4g}", d.global.ratio));
  r.observe("global_norm_ratio", "sharded-total: returned norm / reference's (mean)",
            d.global_norm.mean_ratio, "", fmt::format("{:.4g}", d.global_norm.mean_ratio));
  r.observe("global_factor_spread", "sharded-total: the ranks' clip factors apart (relative, worst step)",
            d.global_spread, "", lab::sci(d.global_spread));
  r.observe("global_factors_step0", "sharded-total: step 0's clip factor per rank", m.global[0].factors[0],
            "", factors_at(m.global, 0));
  r.observe("local_update_diff", "sharded-own: update vs reference", d.local.diff, "",
            lab::percent(d.local.diff, 1));
  r.observe("local_update_ratio", "sharded-own: update size / reference's", d.local.ratio, "",
            fmt::format("{:.3f}", d.local.ratio));
  r.observe("local_factor_spread", "sharded-own: the ranks' clip factors apart (relative, worst step)",
            d.local_spread, "", lab::percent(d.local_spread, 1));
  r.observe("local_factors_step0", "sharded-own: step 0's clip factor per rank", m.local[0].factors[0], "",
            factors_at(m.local, 0));
  r.observe("inf_step_moved_ranks", "sharded-total: ranks whose shard moved on the inf step",
            static_cast<double>(d.inf_moved_ranks));
  r.takeaway(
      "clip after unscale_ (the bound is on the true gradients), and with sharded gradients by one factor "
      "from "
      "the global norm: sqrt of the all-reduced sum of squared shard norms, as an unsharded run computes it");
}

void report_checks(const Result& m, const Derived& d, lab::Report& r) {
  // Catches a clip by the shard's own norm (no group), a clip before unscale_ or after the step, a bound on
  // the squared norm: each changes the update by more than fp16's rounding.
  r.check("global-clip-matches-reference",
          "sharded over the ranks, clipped by the global norm: the update is the fp32 reference's, to fp16 "
          "rounding, "
          "and every replica ends equal",
          d.global.diff <= kRoundingTol && d.replicas_equal,
          fmt::format("update vs reference {} (need <= {}); replicas {}", lab::sci(d.global.diff),
                      lab::sci(kRoundingTol), d.replicas_equal ? "equal" : "differ"));
  // Catches a norm of the scaled gradients, of one shard, or squared, and a norm that differs between ranks.
  r.check("global-norm-matches-reference",
          "every rank's step returns the same global norm, the reference's true norm on every step "
          "(non-finite on "
          "the inf step)",
          d.norms_agree && d.global_norm.worst <= kRoundingTol && d.global_norm.inf_seen,
          fmt::format("ranks {}; worst |norm / reference - 1| {}; inf step's norm {}",
                      d.norms_agree ? "agree" : "disagree", lab::sci(d.global_norm.worst),
                      d.global_norm.inf_seen ? "non-finite" : "finite"));
  // The lab's own mistake: shows that per-shard clipping changes the update, and what the factors are.
  r.check(
      "local-clip-differs",
      fmt::format("clipped by each shard's own norm, the ranks' factors differ and the update is {} or more "
                  "off the reference",
                  lab::percent(kMeasurable, 0)),
      d.local.diff >= kMeasurable && d.local_spread >= kMeasurable,
      fmt::format("update off by {}; step 0's factors {}", lab::percent(d.local.diff, 1),
                  factors_at(m.local, 0)));
  // Catches an optimizer step outside scaler.step (it steps on the inf), and a clip that lets a rank skip
  // a clean step.
  r.check("inf-skips-every-rank",
          fmt::format(
              "the inf in one rank's shard skips step {} on every rank; every other step moves every shard",
              kInfStep),
          d.inf_moved_ranks == 0 && d.clean_kept_ranks == 0,
          fmt::format("{} of {} ranks moved on the inf step; {} rank-steps kept on clean steps",
                      d.inf_moved_ranks, m.world, d.clean_kept_ranks));
  // Catches amp.cpp's step going wrong with no group: the one-process case.
  r.check("whole-clip-matches-reference",
          "one process, clip after unscale_: the update and the norm are the reference's, to fp16 rounding",
          d.whole.diff <= kRoundingTol && d.whole_norm.worst <= kRoundingTol && d.whole_norm.inf_seen,
          fmt::format("update vs reference {}, worst norm {} off", lab::sci(d.whole.diff),
                      lab::sci(d.whole_norm.worst)));
  // The lab's own mistake: a clip before unscale_ bounds the scaled gradients, so its factor on the true
  // gradients is the reference's divided by the scale (step 0, where both start from the same weights).
  const double off = m.clip_first.factors[0] / double(m.reference.factors[0]) * kInitScale;
  r.check("clip-first-off-by-scale",
          "clipped before unscale_, the clip factor on the true gradients is the reference's divided by the "
          "scale, within 10%",
          m.reference.factors[0] < 1 && off >= 0.9 && off <= 1.1,
          fmt::format("step 0's factor {} against the reference's {:.4f}: x scale {} = {:.4f}",
                      lab::sci(m.clip_first.factors[0]), m.reference.factors[0], pow2(kInitScale), off));
}

void report(const Result& m, lab::Report& r) {
  const Derived d = derive(m);
  report_runs(m, d, r);
  report_where(m, r);
  report_numbers(m, d, r);
  report_checks(m, d, r);
}

}  // namespace

AMP_LAB(measure, report);
