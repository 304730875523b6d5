// Processes for labs that run as several ranks (c10d): the job's environment checked like command-line
// values, the TCP store the ranks meet at (every network wait under one deadline), the rank processes
// started on this machine, watched, blamed and reaped, and the values they hand back through the store.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace lab {

// The environment variable's value, "" when unset.
std::string env(const char* name);

// How long one network wait of a rank may take (the store's connection and handshake, each store read,
// each collective): AMP_LAB_RANK_TIMEOUT seconds, 30 when unset, 0.1 to 3600. A bad value throws
// UsageError quoting it.
constexpr const char* kRankTimeoutVar = "AMP_LAB_RANK_TIMEOUT";
std::chrono::milliseconds rank_timeout();

// An integer environment variable in [lo, hi]: decimal digits only. Unset or empty: `fallback`, or a
// UsageError when there is none. A bad value throws UsageError naming the variable and quoting the value
// (lab::quote), as a bad command-line value does.
int env_int(const char* name, int lo, int hi, std::optional<int> fallback = std::nullopt);

// One rank of a job launched as torchrun launches it: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and
// TORCHELASTIC_USE_AGENT_STORE=True when the launcher, not rank 0, hosts the store).
struct JobEnv {
  int rank = 0, world = 0;
  std::string master_addr;  // a host name or an IP address
  int master_port = 0;      // 1..65535
  bool agent_store = false;
};
// nullopt when RANK is unset (this process is no rank of a job). Otherwise every variable checked: a
// missing, malformed or out-of-range one (WORLD_SIZE outside [2, max_world]) throws UsageError.
std::optional<JobEnv> job_env(int max_world);

// One rank of a job, what went wrong said in one line naming the rank at fault, without c10d's or Gloo's
// own text. quiet_c10d_warnings() keeps c10d's warning lines (a store read's timeout) off stderr;
// await_ranks() has every rank say it came and wait, at most `timeout`, for the others, naming those that
// did not (std::runtime_error); job_failure() is the line for `e`, which ended this rank's part: the ranks
// that do not answer within `timeout` (stopped, killed, gone), else e's own line without Gloo's source path.
// It asks the store under that deadline too: a store that stopped (rank 0 paused) is rank 0's fault.
void quiet_c10d_warnings();
void await_ranks(c10d::Store& store, int rank, int world, std::chrono::milliseconds timeout);
std::string job_failure(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                        std::chrono::milliseconds timeout, const std::exception& e);

// The c10d TCPStore at host:port. A server binds port (0: a free one) on this machine. A client first
// resolves host, connects (retrying while nothing listens yet, as rank 0 may start later) and checks that
// a TCPStore answers its handshake, all within `timeout`, so a master that is unreachable, silent or no
// TCPStore fails with one line (std::runtime_error) instead of LibTorch's retries, warnings and backtrace.
// The store's own reads then wait at most `timeout` each.
c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server,
                                              std::chrono::milliseconds timeout);

// The port a server store from connect_store bound.
int store_port(c10d::Store& store);

// How to start a program that runs the lab `id` (its declaration in labs/catalog.cpp) as one rank: the lab's
// own executable, when this process is it or another single-lab executable of `id` (an exercise's), or found
// beside this program or in this build's bin/ folder; otherwise, when this process is the amp-lab runner,
// "amp-lab run <id>". Throws std::runtime_error (one line) when neither is there. `args` are the lab's flags,
// appended by spawn_ranks.
struct RankProgram {
  std::string path;
  std::vector<std::string> args;
};
RankProgram rank_program(const std::string& id);

struct SpawnOptions {
  int world = 2;
  RankProgram program;
  std::function<std::vector<std::string>(int rank)> vars_of;  // "NAME=value", added to this environment
  std::chrono::seconds deadline{240};                         // the whole run
  // Where to write the ranks' process ids, one a line in rank order, once all are started ("" for
  // nowhere): tests stop or kill a rank from outside.
  std::string pids_file;
  // The longest a rank may stay paused (SIGSTOP), or keep running once a peer has finished, before it is
  // blamed. Unset: the ranks' network timeout (rank_timeout()).
  std::optional<std::chrono::milliseconds> rank_timeout;
  // Asked once for each rank that exits 0 or 1: whether it handed back its values. One that did not (its
  // code called exit()) is blamed at once. Unset: every such rank did.
  std::function<bool(int rank)> handed_back;
};

// Starts `world` ranks of `program` and waits for them. Each rank runs in a process group of its own (the
// terminal's Ctrl-C reaches this process only), with stdin and stdout on /dev/null and its stderr read by
// this process, and dies with this process (PR_SET_PDEATHSIG). A rank that exits 0 or 1 (its checks'
// verdict) has finished. Otherwise every rank still running is stopped and std::runtime_error says, in
// one line, which rank is to blame: one killed by a signal; else one that stopped answering (stopped by a
// signal, or still running after its peers gave up waiting for it); else the first that failed, with the
// last line it printed. A rank paused for longer than rank_timeout, or still running rank_timeout after a
// peer finished, stopped answering; one that finished without handing back its values is named as such.
// After `deadline`, every rank is stopped. On SIGINT, SIGTERM or SIGHUP the ranks are stopped and
// Interrupted is thrown; when the program has a handler of its own for that signal (amp-lab's, which lets
// the lab finish) that handler is called instead and the ranks run on. No rank outlives the call, nor does
// any process a rank started, whatever group or session it moved to (become_subreaper, end_descendants).
void spawn_ranks(const SpawnOptions& options);

// Float vectors and byte strings through the store, under `key`; get waits for the key (at most the
// store's timeout).
void store_set(c10d::Store& store, const std::string& key, const void* data, size_t bytes);
std::vector<float> store_get_floats(c10d::Store& store, const std::string& key);
std::string store_get_string(c10d::Store& store, const std::string& key);

// Every rank counts itself in under `key`; rank 0 then waits, at most `timeout`, until all `world` have,
// so a store it hosts outlives the other ranks' reads.
void store_barrier(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key, int rank, int world,
                   std::chrono::milliseconds timeout);

}  // namespace lab
