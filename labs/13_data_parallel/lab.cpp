// Lab 13: data-parallel AMP on c10d, and the inf/NaN verdict of sharded gradients (quiz question 13). The
// AMP code is in amp.cpp.
//
// Two ranks (WORLD_SIZE=2..6 for more) train one MLP under fp16 autocast with amp::GradScaler, each on
// batches of its own, three ways from the same start:
//   ddp             the scaled gradients are all-reduced; every rank unscales, checks and steps all of them;
//   sharded-local   ZeRO-2 style: each rank unscales, checks and steps only the parameters it owns, then
//                   broadcasts them; its scaler sees only its shard's found_inf;
//   sharded-global  the same, the scaler given the process group (GradScalerOptions::found_inf_reducer):
//                   found_inf is all-reduced before step() decides.
// The scale grows every 3 steps, so the last layer's gradient keeps overflowing while the first layers'
// stay finite: the inf lands in one rank's shard. The ranks, their store and their process group are
// src/lab/rank_launch.h's (lab::run_ranks).
//
// Run:  build/bin/lab13_data_parallel [--quick] [--seed N] [--device cpu|cuda] [--json]
//       It starts the ranks itself, as processes of this executable on 127.0.0.1, and hosts their store.
//       Across machines, set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun does (rank 0 hosts
//       the store) and every rank prints the same report. CPU: Gloo. --device cuda: NCCL when every rank
//       has a GPU of its own, else Gloo on CUDA tensors. fp16 (fp16 overflows); it refuses --dtype.
//       AMP_LAB_RANK_TIMEOUT=S  the longest any network wait may take, in seconds (default 30).
//       AMP_LAB_RANK_PIDS=FILE  the spawned ranks' process ids are written there, one a line.
// That ddp's ranks skip the same steps holds by construction (every rank unscales the same all-reduced
// gradients), so the lab shows it and does not check it. ddp's step is the lab's own (judge.cpp's
// reference_*), not amp.cpp's: the sharded runs, amp.cpp's code, are checked against it, so that a mistake
// made in every run (gradients not averaged, no update(), a wrong start scale) cannot hide by matching
// itself.
// --flip: sharded-global's scaler gets no process group; check sharded-global-matches-ddp then fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/distributed.h"
#include "amp/grad_scaler.h"
#include "judge.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/rank_launch.h"
#include "lab/ranks.h"
#include "lab/registry.h"
#include "lab/text.h"

namespace {

using namespace lab13;

constexpr int64_t kSteps = 60, kStepsQuick = 40;     // SGD steps per run
constexpr int64_t kBatch = 64;                       // per rank and step
constexpr int64_t kIn = 16, kHidden = 64, kOut = 8;  // MLP widths; targets tanh(x @ teacher)
constexpr double kLr = 0.05, kMomentum = 0.9;        // SGD
constexpr int kDefaultWorld = 2, kMaxWorld = 6;      // 6 parameter tensors: at most one shard each
constexpr std::chrono::seconds kRunDeadline{240};    // the spawned ranks' whole run
constexpr double kMixOff = 1.5;  // check: once the scales part, an applied gradient this far off, or further

// ---- measure: the ranks' runs ------------------------------------------------------------------------

struct Experiment {
  const char* name;
  bool sharded;         // each rank steps only the parameters it owns (else all of them: DDP)
  bool global_verdict;  // the scaler has the process group (--flip: not even in sharded-global)
};
constexpr Experiment kDdp{"ddp", false, false}, kShardedLocal{"sharded-local", true, false},
    kShardedGlobal{"sharded-global", true, true};
constexpr const Experiment* kExperiments[] = {&kDdp, &kShardedLocal, &kShardedGlobal};  // the order they run

struct RunSetup {  // the same on every rank
  int64_t steps = 0;
  uint64_t seed = 0;
  bool flip = false;
};

// One rank's run. verdicts, one char per step: bit 0 its own backward gave an inf, bit 1 its optimizer's
// gradients held an inf after the all-reduce (what its scaler checked), bit 2 its step said it stepped
// (step_and_update's flag), bit 3 its optimizer's parameters changed in that step (bitwise).
struct RankRun {
  std::string verdicts;
  std::string grad_dtype;      // the dtype of the gradients it all-reduced
  std::vector<float> scales;   // the scale of each step's loss, then the final scale
  std::vector<float> weights;  // every parameter at the end, flattened
};

// The layers in named statements, so that the seed fixes the same weights under every compiler (the
// arguments of one call are evaluated in an unspecified order): last to first, the order g++ took.
torch::nn::Sequential make_mlp() {
  const torch::nn::Linear out(kHidden, kOut);
  const torch::nn::Linear hidden(kHidden, kHidden);
  const torch::nn::Linear in(kIn, kHidden);
  return torch::nn::Sequential(in, torch::nn::Tanh(), hidden, torch::nn::Tanh(), out);
}

bool any_nonfinite(const std::vector<torch::Tensor>& params) {
  bool any = false;
  for (const auto& p : params) any = any || !torch::isfinite(p.grad()).all().item<bool>();
  return any;
}

// "fp32" when every gradient is fp32, else every gradient's dtype in order.
std::string dtypes_of_grads(const std::vector<torch::Tensor>& params) {
  bool same = true;
  for (const auto& p : params) same = same && p.grad().scalar_type() == params[0].grad().scalar_type();
  return same ? lab::short_name(params[0].grad().scalar_type()) : lab::short_names(lab::grads(params));
}

// Every parameter's values, flattened, in order.
std::vector<float> flat_values(const std::vector<torch::Tensor>& params) {
  std::vector<float> out;
  for (const auto& p : params) {
    const torch::Tensor t = p.detach().flatten().cpu().contiguous();
    out.insert(out.end(), t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }
  return out;
}

// Contiguous shards: parameter tensor i of n belongs to rank i * world / n.
std::vector<int> shard_owners(size_t n, int world) {
  std::vector<int> owners;
  for (size_t i = 0; i < n; ++i) owners.push_back(static_cast<int>(i * static_cast<size_t>(world) / n));
  return owners;
}

// Whether any parameter's bits differ from `before` (bitwise, so that a NaN kept is not a change).
bool changed(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& before) {
  bool any = false;
  for (size_t i = 0; i < params.size(); ++i)
    any = any || !torch::equal(params[i].detach().view(torch::kInt32), before[i].view(torch::kInt32));
  return any;
}

RankRun run_on_rank(const Experiment& e, const lab::RankSlot& r, const RunSetup& s) {
  const c10::intrusive_ptr<c10d::Backend>& pg = r.group;
  torch::manual_seed(s.seed);  // the same start on every rank, in every run
  torch::nn::Sequential model = make_mlp();
  model->to(r.device);
  const torch::Tensor teacher = torch::randn({kIn, kOut}).to(r.device);
  const std::vector<torch::Tensor> params = model->parameters();
  const std::vector<int> owners = e.sharded ? shard_owners(params.size(), r.world) : std::vector<int>{};
  std::vector<torch::Tensor> mine;
  for (size_t i = 0; i < params.size(); ++i)
    if (owners.empty() || owners[i] == r.rank) mine.push_back(params[i]);
  torch::optim::SGD opt(mine, torch::optim::SGDOptions(kLr).momentum(kMomentum));
  // ddp's scaler is the lab's too: a wrong start scale or growth interval in make_scaler then shows.
  amp::GradScaler scaler =
      e.sharded ? make_scaler(r.device, pg, e.global_verdict && !s.flip)
                : amp::GradScaler(r.device, {.init_scale = kInitScale, .growth_interval = kGrowthInterval});
  RankRun run;
  for (int64_t step = 0; step < s.steps; ++step) {
    torch::manual_seed(s.seed + 1 + static_cast<uint64_t>(step * r.world + r.rank));  // this rank's batch
    const torch::Tensor x = torch::randn({kBatch, kIn}).to(r.device), y = torch::tanh(x.matmul(teacher));
    run.scales.push_back(static_cast<float>(scaler.get_scale()));
    if (e.sharded)
      forward_backward(model, scaler, x, y);
    else
      judge::reference_forward_backward(model, scaler, x, y);
    const bool own_inf = any_nonfinite(params);
    if (e.sharded)
      all_reduce_gradients(model, pg);
    else
      judge::reference_all_reduce(model, pg);
    std::vector<torch::Tensor> before;
    for (const auto& p : mine) before.push_back(p.detach().clone());
    bool stepped = false;
    if (e.sharded) {
      stepped = step_and_update(model, opt, scaler, pg, owners);
    } else {
      stepped = scaler.step(opt);
      scaler.update();
    }
    const bool checked_inf = any_nonfinite(mine);  // unscaled now: what its scaler looked at
    const bool moved = changed(mine, before);
    run.verdicts += static_cast<char>('0' + own_inf + 2 * checked_inf + 4 * stepped + 8 * moved);
  }
  run.scales.push_back(static_cast<float>(scaler.get_scale()));
  run.grad_dtype = dtypes_of_grads(params);
  run.weights = flat_values(params);
  return run;
}

// ---- measure: every rank's runs, gathered ------------------------------------------------------------

struct Runs {  // each experiment's runs, one per rank in rank order
  std::vector<RankRun> ddp, sharded_local, sharded_global;
};

struct Result {
  lab::Context ctx;
  int world = 0;
  int64_t steps = 0;
  std::string where;                     // spawned here, or this rank of a job
  std::string backend;                   // which c10d backend, on which tensors, and why
  std::string sockets;                   // where Gloo's sockets bind
  std::chrono::milliseconds timeout{0};  // the longest one network wait may take
  std::string grad_dtype;                // the dtype of the gradients the ranks all-reduced ("fp32")
  bool fp16_all_reduce_exact = false;    // an fp16 tensor all-reduced once, its sum exact on every rank
  Runs runs;
};

std::string key(const Experiment& e, const char* what) {
  return fmt::format("{}/{}", e.name, what);
}

// Everything one rank does on its process group: an fp16 all-reduce, then the three runs, by name.
lab::RankValues serve_as_rank(const lab::RankSlot& r, const RunSetup& s) {
  std::vector<torch::Tensor> half{
      torch::full({4}, 0.5 + r.rank, torch::dtype(torch::kHalf).device(r.device))};
  r.group->allreduce(half)->wait();  // fp16 tensors cross processes too: 0.5 + 1.5 + ... is exact in fp16
  const double expected = 0.5 * r.world * r.world;
  const bool exact = (half[0].to(torch::kDouble) == expected).all().item<bool>();
  lab::RankValues values;
  for (const Experiment* e : kExperiments) {
    RankRun run = run_on_rank(*e, r, s);
    values.strings["grad_dtype"] = run.grad_dtype;
    values.strings[key(*e, "verdicts")] = std::move(run.verdicts);
    values.floats[key(*e, "scales")] = std::move(run.scales);
    values.floats[key(*e, "weights")] = std::move(run.weights);
  }
  values.strings["fp16_all_reduce_exact"] = exact ? "1" : "0";
  return values;
}

std::vector<RankRun> runs_of(const std::vector<lab::RankValues>& ranks, const Experiment& e) {
  std::vector<RankRun> runs;
  for (const lab::RankValues& v : ranks)
    runs.push_back({.verdicts = v.get_string(key(e, "verdicts")),
                    .scales = v.get_floats(key(e, "scales")),
                    .weights = v.get_floats(key(e, "weights"))});
  return runs;
}

Result measure(const lab::Context& ctx) {
  const RunSetup setup{.steps = ctx.quick ? kStepsQuick : kSteps, .seed = ctx.seed, .flip = ctx.flip};
  const lab::RanksRun ranks = lab::run_ranks(ctx,
                                             {.lab = "data-parallel",
                                              .max_world = kMaxWorld,
                                              .default_world = kDefaultWorld,
                                              .deadline = kRunDeadline},
                                             [&](const lab::RankSlot& r) { return serve_as_rank(r, setup); });
  Result m{.ctx = ctx,
           .world = ranks.world,
           .steps = setup.steps,
           .where = ranks.where,
           .backend = ranks.backend,
           .sockets = ranks.sockets,
           .timeout = ranks.timeout};
  m.fp16_all_reduce_exact = true;
  for (const lab::RankValues& v : ranks.ranks) {
    m.fp16_all_reduce_exact &= v.get_string("fp16_all_reduce_exact") == "1";
    m.grad_dtype = v.get_string("grad_dtype");
  }
  m.runs = {.ddp = runs_of(ranks.ranks, kDdp),
            .sharded_local = runs_of(ranks.ranks, kShardedLocal),
            .sharded_global = runs_of(ranks.ranks, kShardedGlobal)};
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

struct Summary {
  int64_t inf_steps = 0;     // some rank's scaler checked an inf
  int64_t skipped = 0;       // some rank skipped
  int64_t disagree = 0;      // the ranks decided differently
  int64_t moved_on_inf = 0;  // steps a rank's parameters changed while its checked gradients held an inf
  bool as_designed = true;   // each rank skipped exactly where its design says (see summarize)
  bool replicas_equal = true;
};

int bits(const RankRun& r, size_t step) {
  return r.verdicts[step] - '0';
}
bool own_inf(const RankRun& r, size_t step) {
  return (bits(r, step) & 1) != 0;
}
bool checked_inf(const RankRun& r, size_t step) {
  return (bits(r, step) & 2) != 0;
}
bool stepped(const RankRun& r, size_t step) {
  return (bits(r, step) & 4) != 0;
}
bool moved(const RankRun& r, size_t step) {
  return (bits(r, step) & 8) != 0;
}
// What a rank's step did, read from its optimizer's parameters, not from the flag step_and_update returned:
// a wrong flag fails stepped-flag-matches-weights, and no other check.
bool applied(const RankRun& r, size_t step) {
  return moved(r, step);
}

// ddp: every rank skips exactly where some rank's own backward gave an inf (the all-reduce spreads it);
// sharded-local: each rank where its own shard held one; sharded-global: every rank where any shard did.
Summary summarize(const std::vector<RankRun>& ranks, const Experiment& e) {
  Summary s;
  for (size_t step = 0; step < ranks[0].verdicts.size(); ++step) {
    bool any_own = false, any_checked = false, all_step = true, any_step = false;
    for (const RankRun& r : ranks) {
      any_own |= own_inf(r, step);
      any_checked |= checked_inf(r, step);
      all_step &= applied(r, step);
      any_step |= applied(r, step);
      s.moved_on_inf += checked_inf(r, step) && moved(r, step);
      if (e.sharded && !e.global_verdict) s.as_designed &= applied(r, step) != checked_inf(r, step);
    }
    if (!e.sharded) s.as_designed &= all_step == !any_own && any_step == all_step;
    if (e.sharded && e.global_verdict) s.as_designed &= all_step == !any_checked && any_step == all_step;
    s.inf_steps += any_checked;
    s.skipped += !all_step;
    s.disagree += any_step && !all_step;
  }
  for (const RankRun& r : ranks) s.replicas_equal &= r.weights == ranks[0].weights;
  return s;
}

// What the report reads of one experiment: its ranks' runs, their summary, and how far rank 0's weights
// ended from ddp's (max |w - w_ddp| / max |w_ddp|).
struct Outcome {
  const Experiment& experiment;
  const std::vector<RankRun>& ranks;
  Summary sum;
  double drift = 0;
};
struct Outcomes {
  Outcome ddp, local, global;
};

Outcomes outcomes_of(const Runs& runs) {
  auto of = [&](const Experiment& e, const std::vector<RankRun>& ranks) {
    return Outcome{e, ranks, summarize(ranks, e), lab::max_rel_diff(ranks[0].weights, runs.ddp[0].weights)};
  };
  return {of(kDdp, runs.ddp), of(kShardedLocal, runs.sharded_local), of(kShardedGlobal, runs.sharded_global)};
}

// How a run's ranks came apart, from their decisions and scales at each step.
struct Apart {
  int64_t first_disagreement = -1;  // the first step the ranks decided differently
  int64_t parted_at = -1;           // the first step whose loss scales differ between ranks
  int64_t inf_after_part = 0;       // steps with an inf from parted_at on
  // Sharded, the owner of a shard divides the all-reduced sum of S_r * g_r by its own S_o: its gradient
  // is off by mean_r(S_r) / S_o. The factor furthest from 1 on a step the owner applied (log2), and where.
  double max_mix_log2 = 0;
  int mix_rank = -1;
  int64_t mix_step = -1;
  int64_t overflow_from = -1;  // from this step to the end, every rank's own backward overflowed
  // The rank whose own backward overflowed most often outside its shard (so it stepped, and its scale
  // grew on, while the inf landed in a shard another rank checks), and on how many steps.
  int elsewhere_rank = -1;
  int64_t elsewhere_steps = 0;
};

Apart apart_of(const std::vector<RankRun>& ranks) {
  Apart a;
  const size_t steps = ranks[0].verdicts.size();
  for (size_t step = 0; step < steps; ++step) {
    double mean = 0, lo = ranks[0].scales[step], hi = lo;
    bool all_step = true, any_step = false, all_own = true, any_checked = false;
    for (const RankRun& r : ranks) {
      mean += r.scales[step] / static_cast<double>(ranks.size());
      lo = std::min<double>(lo, r.scales[step]), hi = std::max<double>(hi, r.scales[step]);
      all_step &= applied(r, step), any_step |= applied(r, step);
      all_own &= own_inf(r, step), any_checked |= checked_inf(r, step);
    }
    if (a.first_disagreement < 0 && any_step && !all_step) a.first_disagreement = static_cast<int64_t>(step);
    if (a.parted_at < 0 && lo != hi) a.parted_at = static_cast<int64_t>(step);
    if (a.parted_at >= 0) a.inf_after_part += any_checked;
    for (size_t rank = 0; rank < ranks.size(); ++rank) {
      const double scale = ranks[rank].scales[step];
      if (!applied(ranks[rank], step) || scale <= 0) continue;
      const double off = std::log2(mean / scale);
      if (std::abs(off) <= std::abs(a.max_mix_log2)) continue;
      a.max_mix_log2 = off;
      a.mix_rank = static_cast<int>(rank), a.mix_step = static_cast<int64_t>(step);
    }
    if (!all_own)
      a.overflow_from = -1;
    else if (a.overflow_from < 0)
      a.overflow_from = static_cast<int64_t>(step);
  }
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    int64_t n = 0;
    for (size_t step = 0; step < steps; ++step)
      n += own_inf(ranks[rank], step) && !checked_inf(ranks[rank], step) && applied(ranks[rank], step);
    if (n > a.elsewhere_steps) a.elsewhere_steps = n, a.elsewhere_rank = static_cast<int>(rank);
  }
  return a;
}

std::string pow2(double x) {
  return x > 0    ? fmt::format("2^{:g}", std::round(std::log2(x) * 10) / 10)
         : x == 0 ? "0"
                  : fmt::format("{:g}", x);
}

// A factor on a gradient, in words: "about 2^14 times too large", "about 0.51 times its true size". The
// factor is the ranks' mean scale over the owner's, what the applied gradient would be off by if every
// rank's gradient were alike: computed from the scales, not measured on gradients.
std::string factor_words(double log2_factor) {
  if (log2_factor >= 1) return "about " + pow2(std::exp2(log2_factor)) + " times too large";
  return fmt::format("about {:.2f} times its true size", std::exp2(log2_factor));
}

std::string final_scales(const std::vector<RankRun>& ranks, const char* sep = " ") {
  std::string s;
  for (const RankRun& r : ranks) s += (s.empty() ? "" : sep) + pow2(r.scales.back());
  return s;
}

std::string ranks_that(const std::vector<RankRun>& ranks, size_t step, bool skipped) {
  std::string s;
  for (size_t r = 0; r < ranks.size(); ++r)
    if (applied(ranks[r], step) != skipped) s += fmt::format("{}{}", s.empty() ? "" : ", ", r);
  return s;
}

// The essential part, before the question: the setup and the three runs side by side.
void report_runs(const Result& m, const Outcomes& o, lab::Report& r) {
  if (m.ctx.flip) r.note("FLIP: sharded-global's scaler has no process group: found_inf is not all-reduced");
  r.section(fmt::format("{} ranks, {} SGD steps per run, batch {} per rank", m.world, m.steps, kBatch));
  r.note(fmt::format("{}; {}", m.backend, m.where));  // where: spawned on 127.0.0.1, or a job
  r.note(fmt::format("fp16 autocast + amp::GradScaler from 2^16, x2 after {} clean steps (PyTorch: 2000)",
                     kGrowthInterval));
  r.note(fmt::format("sharded: the parameter tensors w1 b1 w2 b2 w3 b3 in {} contiguous shards", m.world));
  auto& t = r.table("", {"run", "inf steps", "skipped", "disagree", "final scales", "vs ddp"});
  for (const Outcome* x : {&o.ddp, &o.local, &o.global})
    t.row({x->experiment.name, std::to_string(x->sum.inf_steps), std::to_string(x->sum.skipped),
           std::to_string(x->sum.disagree), final_scales(x->ranks), lab::sci(x->drift)});
  r.note("inf steps: some rank's scaler found an inf; skipped: some rank skipped the step");
  r.note("disagree: the ranks did not all decide alike; vs ddp: max |w - w_ddp| / max |w_ddp|");

  r.detail_section("The runs in numbers");
  r.observe("ddp_skipped", "ddp: steps skipped", static_cast<double>(o.ddp.sum.skipped));
  r.observe("local_disagree_steps", "sharded-local: steps the ranks decided differently",
            static_cast<double>(o.local.sum.disagree));
  r.observe("local_drift", "sharded-local: weights vs ddp (max relative difference)", o.local.drift, "",
            lab::sci(o.local.drift));
  r.observe("local_moved_on_inf", "sharded-local: rank-steps whose parameters changed despite an inf",
            static_cast<double>(o.local.sum.moved_on_inf));
  const bool as_global =
      o.local.sum.inf_steps > 0 && o.local.sum.disagree == 0 && o.local.sum.moved_on_inf == 0;
  r.observe("local_as_global",
            "sharded-local decided as a global verdict does: alike on every rank, no inf stepped (1 = yes)",
            as_global);
  r.observe("global_disagree_steps", "sharded-global: steps the ranks decided differently",
            static_cast<double>(o.global.sum.disagree));
  r.observe("global_skipped", "sharded-global: steps some rank skipped",
            static_cast<double>(o.global.sum.skipped));
  r.observe("global_moved_on_inf", "sharded-global: rank-steps whose parameters changed despite an inf",
            static_cast<double>(o.global.sum.moved_on_inf));
  r.observe("global_final_scale", "sharded-global: rank 0's final scale", o.global.ranks[0].scales.back(), "",
            pow2(o.global.ranks[0].scales.back()));
  r.observe("global_drift", "sharded-global: weights vs ddp (max relative difference)", o.global.drift, "",
            lab::sci(o.global.drift));
}

// After the answer: how sharded-local's ranks came apart, step by step, in this run's numbers.
void report_apart(const Result& m, const Outcomes& o, const Apart& a, lab::Report& r) {
  const Summary &ddp = o.ddp.sum, &local = o.local.sum;
  const std::vector<RankRun>& runs = o.local.ranks;
  r.detail_section("How sharded-local came apart");
  if (a.first_disagreement >= 0)
    r.note(
        fmt::format("step {}: the ranks first decided differently (rank {} skipped, rank {} stepped): "
                    "each checked only its own shard",
                    a.first_disagreement, ranks_that(runs, static_cast<size_t>(a.first_disagreement), true),
                    ranks_that(runs, static_cast<size_t>(a.first_disagreement), false)));
  if (a.parted_at >= 0)
    r.note(
        fmt::format("from step {} the ranks' loss scales differed, so the all-reduce summed gradients scaled "
                    "by different "
                    "factors, and each owner divided that sum by its own scale",
                    a.parted_at));
  if (a.elsewhere_rank >= 0)
    r.note(fmt::format(
        "on {} steps rank {}'s own backward overflowed outside its shard: it stepped and its scale "
        "grew on, while the inf landed in a shard that another rank checks, which skipped",
        a.elsewhere_steps, a.elsewhere_rank));
  if (a.mix_rank >= 0)
    r.note(fmt::format(
        "the worst applied step: rank {} at step {} stepped its shard with a gradient {} (the "
        "ranks' mean scale over its own: what it would be off by were the ranks' gradients alike)",
        a.mix_rank, a.mix_step, factor_words(a.max_mix_log2)));
  if (a.overflow_from >= 0)
    r.note(
        fmt::format("from step {} on, every rank's own backward overflowed on every step", a.overflow_from));
  const int64_t after = a.parted_at < 0 ? 0 : m.steps - a.parted_at;
  r.observe("local_parted_at", "sharded-local: first step whose loss scales differ between ranks",
            static_cast<double>(a.parted_at), "", a.parted_at < 0 ? "never" : std::to_string(a.parted_at));
  r.observe("local_max_mix",
            "sharded-local: ranks' mean scale over an owner's, at worst (log2; a gradient's factor off)",
            a.max_mix_log2, "", factor_words(a.max_mix_log2));
  r.observe("local_overflow_from", "sharded-local: every rank's backward overflows from step",
            static_cast<double>(a.overflow_from), "",
            a.overflow_from < 0 ? "never" : std::to_string(a.overflow_from));
  r.observe("local_overflow_elsewhere",
            "sharded-local: steps a rank's own overflow landed in another's shard",
            static_cast<double>(a.elsewhere_steps));
  r.observe("local_inf_steps", "sharded-local: steps with an inf", static_cast<double>(local.inf_steps), "",
            fmt::format("{} of {}", local.inf_steps, m.steps));
  r.observe("local_inf_after_part", "sharded-local: steps with an inf once the scales differ",
            static_cast<double>(a.inf_after_part), "", fmt::format("{} of {}", a.inf_after_part, after));
  r.observe("ddp_inf_steps", "ddp: steps with an inf", static_cast<double>(ddp.inf_steps), "",
            fmt::format("{} of {}", ddp.inf_steps, m.steps));
  r.observe("local_final_scales", "sharded-local: final scales per rank", runs[0].scales.back(), "",
            final_scales(runs, " and "));
}

void report_checks(const Result& m, const Outcomes& o, const Apart& a, lab::Report& r);

void report(const Result& m, lab::Report& r) {
  r.dtypes("fp16", "fp16 autocast on every rank; fp32 weights and gradients, which the all-reduce carries");
  const Outcomes o = outcomes_of(m.runs);
  const Apart a = apart_of(o.local.ranks);
  report_runs(m, o, r);
  report_apart(m, o, a, r);

  r.detail_section("What crossed between the ranks");
  r.observe("grad_dtype", "dtype of the gradients all-reduced (the parameters'; autocast computed in fp16)",
            m.grad_dtype == "fp32" ? 32 : 0, "", m.grad_dtype);
  r.observe("fp16_all_reduce_exact", "an fp16 tensor all-reduced once: its sum exact on every rank",
            m.fp16_all_reduce_exact, "",
            m.fp16_all_reduce_exact ? "exact on every rank" : "not exact on some rank");
  r.note("Gloo's sockets: " + m.sockets);
  r.note(fmt::format("each network wait (the store, its handshake, every collective) may take {:g} s ({})",
                     m.timeout.count() / 1000.0, lab::kRankTimeoutVar));
  r.takeaway(
      "DDP all-reduces the gradients before unscaling, so every rank checks every inf; with sharded "
      "gradients each rank checks only its shard, and found_inf must be all-reduced (ShardedGradScaler, "
      "GradScalerOptions::found_inf_reducer) for one verdict");

  report_checks(m, o, a, r);
}

// The steps, over every rank of the sharded runs, whose flag says otherwise than the weights did.
int64_t flag_mismatches(const Outcomes& o, std::string& first) {
  int64_t n = 0;
  for (const Outcome* x : {&o.local, &o.global})
    for (size_t rank = 0; rank < x->ranks.size(); ++rank)
      for (size_t step = 0; step < x->ranks[rank].verdicts.size(); ++step) {
        const RankRun& run = x->ranks[rank];
        if (stepped(run, step) == moved(run, step)) continue;
        if (n++ == 0)
          first = fmt::format("{} rank {} step {}: returned {}, weights {}", x->experiment.name, rank, step,
                              stepped(run, step), moved(run, step) ? "changed" : "kept");
      }
  return n;
}

// The claims, each computed from this run's decisions, scales and weights.
void report_checks(const Result& m, const Outcomes& o, const Apart& a, lab::Report& r) {
  const Summary &ddp = o.ddp.sum, &local = o.local.sum, &global = o.global.sum;
  // Shown, not checked: ddp's ranks unscale and check the same all-reduced gradients, so they cannot
  // decide differently; what ddp gives is the reference the sharded runs are checked against.
  r.note(fmt::format("ddp, shown: {} skipped, {} disagreements, skips {} the overflows, replicas {}",
                     ddp.skipped, ddp.disagree, ddp.as_designed ? "match" : "do not match",
                     ddp.replicas_equal ? "bitwise equal" : "differ"));
  // Catches a make_scaler that all-reduces found_inf whatever global_verdict says (the local run agrees).
  r.check(
      "sharded-local-diverges",
      "sharded without a global verdict: each rank skips exactly the steps its own shard overflowed, so the "
      "ranks decide differently and the weights drift from ddp's",
      local.as_designed && local.disagree > 0 && o.local.drift > 0,
      fmt::format("each rank's skips {} its shard's infs; {} disagreements; drift {}",
                  local.as_designed ? "match" : "do not match", local.disagree, lab::sci(o.local.drift)),
      // Which mistake: ranks that agree and step no inf share a verdict; an inf stepped is a step outside
      // the scaler (after it, the weights' bits are NaN's, and whether they "change" is the machine's).
      {{"disagree_steps", local.disagree}, {"moved_on_inf", local.moved_on_inf}});
  const int64_t after = a.parted_at < 0 ? 0 : m.steps - a.parted_at;
  r.check("scales-part-then-overflow",
          fmt::format(
              "once the ranks' scales differ, an owner divides its shard's all-reduced gradient by a scale "
              "{}x or more away from the ranks' mean scale (either way), and more steps overflow than in ddp",
              kMixOff),
          after > 0 && std::abs(a.max_mix_log2) >= std::log2(kMixOff) &&
              static_cast<double>(a.inf_after_part) / static_cast<double>(after) >
                  static_cast<double>(ddp.inf_steps) / static_cast<double>(m.steps),
          fmt::format("scales differ from step {}; by the scales an applied gradient {}; then {} of {} steps "
                      "had an inf, ddp {} of {}",
                      a.parted_at, factor_words(a.max_mix_log2), a.inf_after_part, after, ddp.inf_steps,
                      m.steps));
  // Catches a verdict that is not all-reduced, or not with SUM, a step outside scaler.step(opt), and,
  // since ddp's step is the lab's own, a gradient all-reduce that does not average or other scaler options.
  r.check("sharded-global-matches-ddp",
          "sharded with the process-group option: every rank skips the same steps, exactly those where some "
          "shard overflowed, and the weights end bitwise equal to ddp's",
          global.skipped > 0 && global.as_designed && global.disagree == 0 &&
              o.global.ranks[0].weights == o.ddp.ranks[0].weights,
          fmt::format("skipped: {}, disagreements: {}, drift from ddp {}", global.skipped, global.disagree,
                      lab::sci(o.global.drift)));
  // Catches a step_and_update that returns a fixed flag, or not scaler.step's: its flag is what the lab
  // reads as skipped or stepped, so it must say what the optimizer did to the weights.
  std::string first;
  const int64_t mismatches = flag_mismatches(o, first);
  r.check("stepped-flag-matches-weights",
          "sharded, on every rank: step_and_update returns true exactly on the steps that changed its "
          "optimizer's parameters",
          mismatches == 0,
          mismatches == 0 ? "the flag and the weights agree on every step"
                          : fmt::format("{} steps disagree; first: {}", mismatches, first));
}

}  // namespace

AMP_LAB(measure, report);
