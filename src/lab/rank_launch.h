// A function run on every rank of a c10d process group, and what each rank returned, collected: for a lab
// whose measure() trains on several ranks (lab 13). run_ranks() is the whole of it, in two modes:
//   - launched by hand (RANK unset): this process hosts the store on 127.0.0.1 and starts the ranks, as
//     processes of the lab's own executable, as torchrun would (lab/ranks.h: spawn_ranks), and reads what
//     they returned; it runs no rank itself;
//   - one rank of a job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, by torchrun or by the first mode):
//     it joins the store (rank 0 hosts it, unless the launcher's agent does), runs the function as its rank
//     and reads every rank's values, so every rank's report is the same.
// Every network wait is bounded by AMP_LAB_RANK_TIMEOUT (lab::rank_timeout); what goes wrong is one line
// naming the rank at fault (lab/ranks.h).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include "lab/context.h"

namespace c10d {
class Backend;
}

namespace lab {

// What one rank hands back, by name: byte strings and float vectors. A name holds no newline.
struct RankValues {
  std::map<std::string, std::string> strings;
  std::map<std::string, std::vector<float>> floats;
  // The value under `name`; std::runtime_error naming it when the rank returned none.
  const std::string& get_string(const std::string& name) const;
  const std::vector<float>& get_floats(const std::string& name) const;
};

// The rank the function runs as.
struct RankSlot {
  int rank = 0, world = 0;
  at::Device device = at::kCPU;  // cuda:<rank mod the GPUs> under --device cuda, else the context's device
  // The process group, every collective bounded by the rank timeout: NCCL when every rank has a GPU of its
  // own (and this build has NCCL), else Gloo (on CUDA tensors under --device cuda).
  c10::intrusive_ptr<c10d::Backend> group;
};

using RankFn = std::function<RankValues(const RankSlot&)>;

struct RanksOptions {
  std::string lab;        // the lab's id (labs/catalog.cpp): the program the spawned ranks run (rank_program)
  int max_world = 6;      // WORLD_SIZE may be 2 to this
  int default_world = 2;  // the ranks started when WORLD_SIZE is unset
  std::chrono::seconds deadline{240};  // the spawned ranks' whole run
};

struct RanksRun {
  int world = 0;
  std::string where;                     // "spawned on 127.0.0.1", or "rank R of a job at ADDR:PORT"
  std::string backend;                   // which c10d backend, on which tensors, and why
  std::string sockets;                   // where Gloo's sockets bind, and why
  std::chrono::milliseconds timeout{0};  // the longest one network wait may take
  std::vector<RankValues> ranks;         // what each rank's function returned, in rank order
};

// Runs `fn` on every rank (see above) and returns what each returned. Every environment value is checked
// before any rank runs: AMP_LAB_RANK_TIMEOUT, the job's variables (WORLD_SIZE 2 to options.max_world),
// GLOO_SOCKET_IFNAME; a bad one throws UsageError quoting it. The spawned ranks get the context's flags
// (--device, --seed, --dtype when given, --quick, --flip) and --json; AMP_LAB_RANK_PIDS names a file for
// their process ids (SpawnOptions::pids_file). Gloo's sockets bind to the interface GLOO_SOCKET_IFNAME
// names, else to 127.0.0.1 when the master is a loopback address, else to this machine's hostname.
RanksRun run_ranks(const Context& ctx, const RanksOptions& options, const RankFn& fn);

}  // namespace lab
