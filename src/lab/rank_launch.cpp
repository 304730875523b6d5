#include "lab/rank_launch.h"

#include <net/if.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "amp/distributed.h"
#include "lab/cli.h"
#include "lab/ranks.h"
#include "lab/text.h"

namespace lab {

const std::string& RankValues::get_string(const std::string& name) const {
  const auto it = strings.find(name);
  if (it == strings.end()) throw std::runtime_error("a rank returned no string " + quote(name));
  return it->second;
}

const std::vector<float>& RankValues::get_floats(const std::string& name) const {
  const auto it = floats.find(name);
  if (it == floats.end()) throw std::runtime_error("a rank returned no floats " + quote(name));
  return it->second;
}

namespace {

bool is_loopback(const std::string& host) {
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "::1";
}

// Where Gloo's sockets bind: the interface GLOO_SOCKET_IFNAME names, when set; else 127.0.0.1 when the
// master is a loopback address (every rank on this machine); else this machine's hostname. {host, words}.
std::pair<std::string, std::string> gloo_sockets(const std::string& master) {
  const std::string ifname = env("GLOO_SOCKET_IFNAME");
  if (!ifname.empty()) {
    if (ifname.size() >= IF_NAMESIZE || if_nametoindex(ifname.c_str()) == 0)
      throw UsageError("GLOO_SOCKET_IFNAME names no network interface of this machine: " + quote(ifname));
    return {"", "interface " + ifname + " (GLOO_SOCKET_IFNAME)"};
  }
  if (is_loopback(master))
    return {"127.0.0.1", "127.0.0.1 (MASTER_ADDR is loopback; GLOO_SOCKET_IFNAME unset)"};
  return {"", "this machine's hostname (GLOO_SOCKET_IFNAME unset)"};
}

// NCCL when every rank has a GPU of its own (and this build has NCCL); otherwise Gloo.
bool uses_nccl(bool cuda, int world) {
  return cuda && amp::nccl_built() && torch::cuda::device_count() >= std::max<int64_t>(2, world);
}

std::string backend_words(bool cuda, int world) {
  if (!cuda) return "c10d Gloo on CPU tensors";
  if (uses_nccl(cuda, world)) return "c10d NCCL on CUDA tensors, one GPU per rank";
  return fmt::format("c10d Gloo on CUDA tensors ({})",
                     amp::nccl_built() ? fmt::format("NCCL needs a GPU per rank: {} for {}",
                                                     torch::cuda::device_count(), world)
                                       : std::string("this build has no NCCL"));
}

c10::intrusive_ptr<c10d::Backend> make_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                             int world, at::Device device, const std::string& gloo_host,
                                             std::chrono::milliseconds timeout) {
  if (uses_nccl(device.is_cuda(), world)) return amp::make_nccl_group(store, rank, world, timeout);
  return amp::make_gloo_group(store, rank, world, gloo_host, timeout);
}

std::string value_key(int rank, const std::string& what) {
  return fmt::format("amp-lab/ranks/{}/{}", rank, what);
}

// Each value under a key of its own, then the list of their names, which the readers wait for.
void put_values(c10d::Store& store, int rank, const RankValues& values) {
  std::string names;
  auto named = [&](const std::string& name) {
    if (name.find('\n') != std::string::npos) throw std::logic_error("a rank value's name has a newline");
    names += name + "\n";
    return value_key(rank, name);
  };
  for (const auto& [name, s] : values.strings) store_set(store, named("s/" + name), s.data(), s.size());
  for (const auto& [name, f] : values.floats)
    store_set(store, named("f/" + name), f.data(), f.size() * sizeof(float));
  store_set(store, value_key(rank, "names"), names.data(), names.size());  // last: the readers wait for it
}

RankValues get_values(c10d::Store& store, int rank) {
  RankValues values;
  const std::string names = store_get_string(store, value_key(rank, "names"));
  for (size_t from = 0, end; (end = names.find('\n', from)) != std::string::npos; from = end + 1) {
    const std::string name = names.substr(from, end - from);
    if (name.rfind("s/", 0) == 0)
      values.strings[name.substr(2)] = store_get_string(store, value_key(rank, name));
    else
      values.floats[name.substr(2)] = store_get_floats(store, value_key(rank, name));
  }
  return values;
}

// This process is one rank of a job: rank 0 hosts the store, unless the launcher (torchrun's agent) does.
void serve_job_rank(const JobEnv& job, const Context& ctx, const std::string& gloo_host, const RankFn& fn,
                    RanksRun& run) {
  run.where = fmt::format("rank {} of a job at {}:{}", job.rank, job.master_addr, job.master_port);
  const bool hosts_store = job.rank == 0 && !job.agent_store;
  quiet_c10d_warnings();  // a timeout is said once, below, naming the rank at fault
  const auto store = connect_store(job.master_addr, job.master_port, hosts_store, run.timeout);
  // Every rank there before the process group: one that never came is named, not Gloo's missing key.
  await_ranks(*store, job.rank, run.world, run.timeout);
  const at::Device device =
      ctx.cuda() ? at::Device(at::kCUDA, job.rank % torch::cuda::device_count()) : ctx.device;
  try {
    {
      if (device.is_cuda()) torch::cuda::synchronize();  // the CUDA context exists before the group
      const RankSlot slot{.rank = job.rank,
                          .world = run.world,
                          .device = device,
                          .group = make_group(store, job.rank, run.world, device, gloo_host, run.timeout)};
      put_values(*store, job.rank, fn(slot));
    }
    for (int rank = 0; rank < run.world; ++rank) run.ranks.push_back(get_values(*store, rank));
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {  // a collective or a store read timed out, or a rank failed
    throw std::runtime_error(job_failure(store, job.rank, run.world, run.timeout, e));
  }
  if (!job.agent_store) store_barrier(store, "amp-lab/ranks/read", job.rank, run.world, run.timeout);
}

// This process is the launcher: it hosts the store on a free port and starts the ranks, processes of the
// lab's executable, as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
void spawn_and_collect(const Context& ctx, const RanksOptions& o, RanksRun& run) {
  run.where = "spawned on 127.0.0.1";
  const auto store = connect_store("127.0.0.1", 0, /*server=*/true, run.timeout);
  const int port = store_port(*store);
  SpawnOptions s{.world = run.world, .program = rank_program(o.lab)};
  for (std::string arg : {"--json", "--device", ctx.cuda() ? "cuda" : "cpu", "--seed"})
    s.program.args.push_back(arg);
  s.program.args.push_back(std::to_string(ctx.seed));
  if (ctx.dtype_given) s.program.args.insert(s.program.args.end(), {"--dtype", short_name(ctx.dtype)});
  if (ctx.quick) s.program.args.push_back("--quick");
  if (ctx.flip) s.program.args.push_back("--flip");
  const int world = run.world;
  s.vars_of = [world, port](int rank) {
    return std::vector<std::string>{fmt::format("RANK={}", rank),        fmt::format("LOCAL_RANK={}", rank),
                                    fmt::format("WORLD_SIZE={}", world), "MASTER_ADDR=127.0.0.1",
                                    fmt::format("MASTER_PORT={}", port), "TORCHELASTIC_USE_AGENT_STORE=True"};
  };
  s.deadline = o.deadline;
  s.pids_file = env("AMP_LAB_RANK_PIDS");
  s.rank_timeout = run.timeout;
  // The store is this process's own: asking it whether a rank that ended put its values is no network wait.
  s.handed_back = [&store](int rank) { return store->check({value_key(rank, "names")}); };
  spawn_ranks(s);
  for (int rank = 0; rank < run.world; ++rank) run.ranks.push_back(get_values(*store, rank));
}

}  // namespace

RanksRun run_ranks(const Context& ctx, const RanksOptions& options, const RankFn& fn) {
  // A write to a peer that died (Gloo's and the store's sockets) is then an error this rank names the dead
  // peer by, not a SIGPIPE that ends it silently, to be blamed in turn by the ranks still running.
  ::signal(SIGPIPE, SIG_IGN);
  RanksRun run;
  run.timeout = rank_timeout();  // every value checked before any rank runs
  const std::optional<JobEnv> job = job_env(options.max_world);
  run.world = job ? job->world : env_int("WORLD_SIZE", 2, options.max_world, options.default_world);
  const auto [gloo_host, sockets] = gloo_sockets(job ? job->master_addr : "127.0.0.1");
  run.sockets = sockets;
  run.backend = backend_words(ctx.cuda(), run.world);
  if (job)
    serve_job_rank(*job, ctx, gloo_host, fn, run);
  else
    spawn_and_collect(ctx, options, run);
  return run;
}

}  // namespace lab
