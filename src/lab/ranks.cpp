#include "lab/ranks.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "amp/distributed.h"

extern char** environ;

namespace lab {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = amp::kCollectiveTimeout;
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

int store_port(c10d::Store& store) { return static_cast<c10d::TCPStore&>(store).getPort(); }

// Re-exec, not a bare fork(): a lab also runs inside amp-lab and the test binaries, whose OpenMP and
// intra-op thread pools do not survive fork() (a forked child can deadlock in its first parallel op).
// A fresh process has no such state, and every executable that links the lab can serve as a rank.
void spawn_ranks(int world, const std::function<std::vector<std::string>(int rank)>& vars_of,
                 std::chrono::seconds deadline) {
  std::vector<pid_t> pids;
  auto stop_all = [&](const std::string& why) {
    for (pid_t p : pids) if (p > 0) kill(p, SIGKILL);
    for (pid_t p : pids) if (p > 0) waitpid(p, nullptr, 0);
    throw std::runtime_error(why);
  };
  const pid_t parent = getpid();
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> vars = vars_of(rank);
    for (char** e = environ; *e; ++e)  // the rest of this process's environment, minus what vars sets
      if (!std::strchr(*e, '=') || vars.end() == std::find_if(vars.begin(), vars.end(), [&](const std::string& v) {
            return std::strncmp(*e, v.c_str(), v.find('=') + 1) == 0; }))
        vars.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    char arg0[] = "amp-lab-rank";
    char* argv[] = {arg0, nullptr};
    const pid_t pid = fork();
    if (pid < 0) stop_all(fmt::format("could not start rank {}: {}", rank, std::strerror(errno)));
    if (pid == 0) {  // only async-signal-safe calls until exec
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the lab's process dies: its ranks die with it
      if (getppid() != parent) _exit(3);
      execve("/proc/self/exe", argv, envp.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (size_t done = 0; done < pids.size();) {
    // Reap every rank that ended since the last sweep before judging: a killed rank makes its peers fail
    // moments later, and the report names the cause (the killed rank), not a peer that happens to come first.
    std::vector<std::pair<size_t, int>> ended;
    for (size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (pids[r] <= 0 || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      pids[r] = 0;
      ++done;
      ended.emplace_back(r, status);
    }
    for (const auto& [r, status] : ended)
      if (WIFSIGNALED(status))
        stop_all(fmt::format("rank {} of {} was killed by signal {} ({})", r, world, WTERMSIG(status), strsignal(WTERMSIG(status))));
    for (const auto& [r, status] : ended)
      if (WEXITSTATUS(status) != 0)
        stop_all(fmt::format("rank {} of {} failed (exit code {}; its message is above)", r, world, WEXITSTATUS(status)));
    if (std::chrono::steady_clock::now() > end) stop_all(fmt::format("ranks still running after {} s: stopped", deadline.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void store_set(c10d::Store& store, const std::string& key, const void* data, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(data);
  store.set(key, std::vector<uint8_t>(b, b + bytes));
}

std::vector<float> store_get_floats(c10d::Store& store, const std::string& key) {
  store.wait({key});
  const auto v = store.get(key);
  return {reinterpret_cast<const float*>(v.data()), reinterpret_cast<const float*>(v.data() + v.size())};
}

std::string store_get_string(c10d::Store& store, const std::string& key) {
  store.wait({key});
  const auto v = store.get(key);
  return {v.begin(), v.end()};
}

void store_barrier(c10d::Store& store, const std::string& key, int rank, int world) {
  store.add(key, 1);
  if (rank == 0)
    while (store.add(key, 0) < world) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace lab
