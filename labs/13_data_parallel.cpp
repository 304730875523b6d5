// Lab 13: data-parallel AMP on c10d. Backs quiz question 13.
//
// N ranks (default 2; WORLD_SIZE=4 for four) train one fp16-autocast MLP with amp::GradScaler on their own
// batches, three ways, from the same start:
//   ddp            gradients all-reduced, then every rank unscales all of them and steps a full replica;
//   sharded-local  ZeRO-2 style: each rank unscales, checks and steps only the parameters it owns (then
//                  broadcasts them), with a scaler that sees only its shard's found_inf;
//   sharded-global the same with GradScalerOptions::process_group (amp/distributed.h): found_inf is
//                  all-reduced before the skip decision. --flip removes that all-reduce.
// The scaler grows every few steps, so the last layer's batch-summed weight gradient overflows now and
// then while the earlier layers' gradients stay finite: an inf lands in one rank's shard only.
//
// Run alone: build/bin/lab13_data_parallel [--quick] [--flip]    (spawns the ranks on 127.0.0.1)
// Across machines: set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT on each (as torchrun does); rank 0
// hosts the store at MASTER_ADDR:MASTER_PORT and every rank prints the same report.
// CPU tensors over Gloo on every device; an NCCL path is not built (see the device note in the output).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/distributed.h"
#include "lab/cli.h"
#include "lab/measure.h"
#include "lab/ranks.h"
#include "lab/registry.h"

namespace {

constexpr int64_t kSteps = 200;               // SGD steps per run
constexpr int64_t kStepsQuick = 40;           // ... in quick mode
constexpr int64_t kBatch = 64, kIn = 16, kHidden = 64, kOut = 8;  // per-rank batch and MLP widths
constexpr double kLearningRate = 0.05;        // SGD with momentum 0.9
constexpr double kInitScale = 65536.0;        // 2^16: the scaler's default start
constexpr int64_t kGrowthInterval = 3;        // grows often, so it keeps reaching overflow
constexpr int kDefaultWorld = 2, kMaxWorld = 6;  // 6 parameter tensors: at most one shard each
constexpr std::chrono::seconds kRunDeadline{240};  // spawned ranks: the whole run
const char* const kRuns[] = {"ddp", "sharded-local", "sharded-global"};
// Set in the environment of the ranks this lab spawns; caught before main() (see the end of this file).
constexpr const char* kWorkerVar = "AMP_LAB_DATA_PARALLEL_WORKER";
// Test hook: "die:R" or "hang:R" makes rank R die or hang at step 3 of the second run.
constexpr const char* kFaultVar = "AMP_LAB_DATA_PARALLEL_FAULT";

using lab::env;
int owner_of(size_t tensor, int world) { return static_cast<int>(tensor * world / 6); }  // contiguous shards

struct Job { int rank, world; bool quick, flip; uint64_t seed; };

// One rank's three runs; publishes per step "local inf" and "stepped", scales and final weights to the store.
void run_rank(const Job& job, c10::intrusive_ptr<c10d::Store> store) {
  at::set_num_threads(1);
  const std::string master = env("MASTER_ADDR");  // ranks on one machine use loopback; otherwise this host's address
  auto pg = amp::make_gloo_group(store, job.rank, job.world, master == "127.0.0.1" || master == "localhost" ? "127.0.0.1" : "");
  auto wait = [](c10::intrusive_ptr<c10d::Work> w) { if (!w->wait(amp::kCollectiveTimeout)) throw std::runtime_error("collective timed out"); };
  const int64_t steps = job.quick ? kStepsQuick : kSteps;
  for (int run = 0; run < 3; ++run) {
    torch::manual_seed(job.seed);  // the same start on every rank, for every run
    torch::nn::Sequential mlp(torch::nn::Linear(kIn, kHidden), torch::nn::Tanh(), torch::nn::Linear(kHidden, kHidden),
                              torch::nn::Tanh(), torch::nn::Linear(kHidden, kOut));
    const torch::Tensor teacher = torch::randn({kIn, kOut});
    std::vector<torch::Tensor> params = mlp->parameters(), mine;
    for (size_t i = 0; i < params.size(); ++i)
      if (run == 0 || owner_of(i, job.world) == job.rank) mine.push_back(params[i]);
    torch::optim::SGD opt(mine, torch::optim::SGDOptions(kLearningRate).momentum(0.9));
    amp::GradScalerOptions so{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
    if (run == 2 && !job.flip) so.process_group = amp::found_inf_all_reduce(pg);
    amp::GradScaler scaler(torch::kCPU, so);
    std::string flags;
    std::vector<float> scales;
    for (int64_t step = 0; step < steps; ++step) {
      if (run == 1 && step == 3 && env(kFaultVar) == fmt::format("die:{}", job.rank)) std::raise(SIGKILL);
      if (run == 1 && step == 3 && env(kFaultVar) == fmt::format("hang:{}", job.rank)) for (;;) pause();
      torch::manual_seed(job.seed + 1 + static_cast<uint64_t>(step * job.world + job.rank));  // this rank's batch
      const torch::Tensor x = torch::randn({kBatch, kIn}), y = torch::tanh(x.matmul(teacher));
      mlp->zero_grad();  // every gradient, not just the optimizer's shard: all of them enter the all-reduce
      torch::Tensor loss;
      { amp::Autocast ac(torch::kCPU, torch::kHalf); loss = torch::mse_loss(mlp->forward(x), y); }
      scales.push_back(static_cast<float>(scaler.get_scale()));
      scaler.scale(loss).backward();
      auto nonfinite = [](const std::vector<torch::Tensor>& ps) {
        bool any = false;
        for (const auto& p : ps) any = any || !torch::isfinite(p.grad()).all().item<bool>();
        return any;
      };
      const bool local_inf_before = nonfinite(params);
      for (auto& p : params) {  // DDP's gradient all-reduce (ZeRO would reduce-scatter: the same sums)
        std::vector<torch::Tensor> g{p.grad()};
        wait(pg->allreduce(g));
        p.grad().div_(job.world);
      }
      const bool local_inf = run == 0 ? local_inf_before : nonfinite(mine);  // what this rank can see
      const bool stepped = scaler.step(opt);
      for (size_t i = 0; run > 0 && i < params.size(); ++i) {  // owners broadcast their updated shards
        std::vector<torch::Tensor> t{params[i].data()};
        c10d::BroadcastOptions from_owner;
        from_owner.rootRank = owner_of(i, job.world);
        wait(pg->broadcast(t, from_owner));
      }
      scaler.update();
      flags += static_cast<char>('0' + local_inf + 2 * stepped);
    }
    torch::Tensor w = torch::cat([&] { std::vector<torch::Tensor> f; for (auto& p : params) f.push_back(p.detach().flatten()); return f; }());
    const std::string key = fmt::format("amp-lab/dp/{}/{}", kRuns[run], job.rank);
    lab::store_set(*store, key + "/weights", w.data_ptr<float>(), w.numel() * sizeof(float));
    lab::store_set(*store, key + "/scales", scales.data(), scales.size() * sizeof(float));
    lab::store_set(*store, key + "/flags", flags.data(), flags.size());  // last: fetch waits for it
  }
}

Job job_from_env() {
  Job job{std::atoi(env("RANK").c_str()), std::atoi(env("WORLD_SIZE").c_str()), env("AMP_LAB_QUICK") == "1",
          env("AMP_LAB_FLIP") == "1", std::strtoull(env("AMP_LAB_SEED").c_str(), nullptr, 10)};
  if (job.world < 2 || job.world > kMaxWorld || job.rank < 0 || job.rank >= job.world)
    throw lab::UsageError(fmt::format("WORLD_SIZE must be 2..{} and RANK 0..WORLD_SIZE-1, got WORLD_SIZE='{}' RANK='{}'",
                                      kMaxWorld, env("WORLD_SIZE"), env("RANK")));
  return job;
}

// Starts the ranks on this machine (lab::spawn_ranks: fresh processes of this executable) and waits for them.
void spawn_ranks(int port, const lab::Context& ctx, int world) {
  lab::spawn_ranks(world, [&](int rank) {
    return std::vector<std::string>{fmt::format("{}=1", kWorkerVar), fmt::format("RANK={}", rank),
        fmt::format("WORLD_SIZE={}", world), "MASTER_ADDR=127.0.0.1", fmt::format("MASTER_PORT={}", port),
        fmt::format("AMP_LAB_QUICK={:d}", ctx.quick), fmt::format("AMP_LAB_FLIP={:d}", ctx.flip),
        fmt::format("AMP_LAB_SEED={}", ctx.seed)};
  }, kRunDeadline);
}

struct RunResult {
  std::vector<std::string> flags;           // per rank, per step: bit 0 local inf, bit 1 stepped
  std::vector<std::vector<float>> weights, scales;
};

RunResult fetch(c10d::Store& store, const char* run, int world) {
  RunResult r;
  for (int rank = 0; rank < world; ++rank) {
    const std::string key = fmt::format("amp-lab/dp/{}/{}", run, rank);
    r.flags.push_back(lab::store_get_string(store, key + "/flags"));
    r.weights.push_back(lab::store_get_floats(store, key + "/weights"));
    r.scales.push_back(lab::store_get_floats(store, key + "/scales"));
  }
  return r;
}

struct Summary { int64_t inf_steps = 0, skipped = 0, disagree = 0; bool skips_match_infs = true, replicas_equal = true; };

Summary summarize(const RunResult& r) {
  Summary s;
  for (size_t step = 0; step < r.flags[0].size(); ++step) {
    bool any_inf = false, all_skip = true, any_skip = false;
    for (const auto& f : r.flags) {
      const int bits = f[step] - '0';
      any_inf |= bits & 1;
      all_skip &= !(bits & 2);
      any_skip |= !(bits & 2);
    }
    s.inf_steps += any_inf;
    s.skipped += any_skip;
    s.disagree += any_skip && !all_skip;
    s.skips_match_infs &= all_skip == any_inf && any_skip == any_inf;
  }
  for (const auto& w : r.weights) s.replicas_equal &= w == r.weights[0];
  return s;
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("data-parallel", "Sharded gradients need a global inf verdict; DDP has one by construction");
  const bool in_job = !env("RANK").empty();
  Job job = in_job ? job_from_env() : Job{0, env("WORLD_SIZE").empty() ? kDefaultWorld : std::atoi(env("WORLD_SIZE").c_str())};
  job.quick = ctx.quick, job.flip = ctx.flip, job.seed = ctx.seed;  // this rank's flags, not the spawn variables
  if (!in_job && (job.world < 2 || job.world > kMaxWorld))
    throw lab::UsageError(fmt::format("WORLD_SIZE must be 2..{}, got '{}'", kMaxWorld, env("WORLD_SIZE")));
  c10::intrusive_ptr<c10d::Store> store;
  if (in_job) {  // one rank of a job: rank 0 hosts the store, unless torchrun's agent already does
    const bool server = job.rank == 0 && env("TORCHELASTIC_USE_AGENT_STORE") != "True";
    store = lab::connect_store(env("MASTER_ADDR"), std::atoi(env("MASTER_PORT").c_str()), server);
    run_rank(job, store);
  } else {  // port 0: the store binds a free port, which the ranks are told
    store = lab::connect_store("127.0.0.1", 0, /*server=*/true);
    spawn_ranks(lab::store_port(*store), ctx, job.world);
  }
  r.note(fmt::format("{} ranks, c10d Gloo on CPU tensors, {}; fp16 autocast + amp::GradScaler (init 2^16, grows every {} steps), SGD",
                     job.world, in_job ? fmt::format("this is rank {} of a job at {}:{}", job.rank, env("MASTER_ADDR"), env("MASTER_PORT"))
                                       : "spawned on 127.0.0.1", kGrowthInterval));
  if (ctx.cuda()) r.note("CUDA: this lab's ranks still compute on CPU tensors over Gloo (no NCCL path is built)");
  if (ctx.flip) r.note("FLIP: the process-group option is left out: found_inf is not all-reduced in sharded-global");
  r.note(fmt::format("shards: parameter tensors 0-5 (w1 b1 w2 b2 w3 b3) split into {} contiguous ranges; {} steps",
                     job.world, job.quick ? kStepsQuick : kSteps));

  RunResult res[3];
  Summary sum[3];
  for (int i = 0; i < 3; ++i) sum[i] = summarize(res[i] = fetch(*store, kRuns[i], job.world));
  if (in_job) lab::store_barrier(*store, "amp-lab/dp/read", job.rank, job.world);  // rank 0's store outlives the reads
  const double drift[3] = {0, lab::max_rel_diff(res[1].weights[0], res[0].weights[0]), lab::max_rel_diff(res[2].weights[0], res[0].weights[0])};
  auto& t = r.table("the three runs", {"run", "steps with an inf", "skipped", "ranks disagree", "final scales per rank", "replicas equal", "max |w - w_ddp| / max |w_ddp|"});
  for (int i = 0; i < 3; ++i) {
    std::string scales;
    for (const auto& s : res[i].scales) scales += (scales.empty() ? "" : " ") + (s.back() > 0 ? fmt::format("2^{:g}", std::log2(s.back())) : std::string("0"));
    t.row({kRuns[i], std::to_string(sum[i].inf_steps), std::to_string(sum[i].skipped), std::to_string(sum[i].disagree), scales,
           sum[i].replicas_equal ? "bitwise" : "no", lab::sci(drift[i])});
  }
  r.observe("ddp_skipped", "ddp: steps skipped", static_cast<double>(sum[0].skipped));
  r.observe("local_disagree_steps", "sharded-local: steps the ranks decided differently", static_cast<double>(sum[1].disagree));
  r.observe("local_drift", "sharded-local: weights vs ddp (max relative difference)", drift[1], "", lab::sci(drift[1]));
  r.observe("global_disagree_steps", "sharded-global: steps the ranks decided differently", static_cast<double>(sum[2].disagree));
  r.observe("global_drift", "sharded-global: weights vs ddp (max relative difference)", drift[2], "", lab::sci(drift[2]));

  r.check("ddp: every rank makes the same skip decisions, exactly on the steps with an inf on some rank, and the replicas stay bitwise identical",
          sum[0].skipped > 0 && sum[0].disagree == 0 && sum[0].skips_match_infs && sum[0].replicas_equal,
          fmt::format("{} steps skipped, {} disagreements, skips {} the inf steps, replicas {}", sum[0].skipped, sum[0].disagree,
                      sum[0].skips_match_infs ? "match" : "do not match", sum[0].replicas_equal ? "bitwise equal" : "differ"));
  r.check("sharded without a global verdict: ranks skip different steps and the weights drift from ddp's",
          sum[1].disagree > 0 && drift[1] > 0, fmt::format("{} disagreements, drift {}", sum[1].disagree, lab::sci(drift[1])));
  r.check("sharded with the process-group option: ranks skip the same steps, exactly those with an inf on some rank, and end bitwise equal to ddp",
          sum[2].skipped > 0 && sum[2].disagree == 0 && sum[2].skips_match_infs && sum[2].replicas_equal && res[2].weights[0] == res[0].weights[0],
          fmt::format("{} skipped, {} disagreements, drift from ddp {}", sum[2].skipped, sum[2].disagree, lab::sci(drift[2])));
  r.takeaway("DDP all-reduces gradients before unscaling, so every rank sees every inf; with sharded gradients each rank sees only its "
             "shard, and found_inf must be all-reduced (ShardedGradScaler, GradScalerOptions::process_group) for one verdict");
  return r;
}

// A spawned rank: run before main(), whichever executable this is (lab, amp-lab, a test), then exit.
[[maybe_unused]] const bool kIsWorker = [] {
  if (env(kWorkerVar) != "1") return false;
  int code = 0;
  try {
    const Job job = job_from_env();
    run_rank(job, lab::connect_store(env("MASTER_ADDR"), std::atoi(env("MASTER_PORT").c_str()), /*server=*/false));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %s: %s\n", env("RANK").c_str(), lab::one_line(e).c_str());
    code = 3;
  }
  std::fflush(nullptr);
  std::_Exit(code);
}();

}  // namespace

AMP_LAB_RUN(run);
