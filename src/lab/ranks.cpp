#include "lab/ranks.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include <c10/util/Logging.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// The store's wire protocol (QueryType, the magic number): c10d/TCPStoreBackend.hpp up to torch 2.13,
// c10d/store/TCPStoreBackend.hpp from 2.14 on.
#if __has_include(<torch/csrc/distributed/c10d/store/TCPStoreBackend.hpp>)
#include <torch/csrc/distributed/c10d/store/TCPStoreBackend.hpp>
#else
#include <torch/csrc/distributed/c10d/TCPStoreBackend.hpp>
#endif

#include "amp/detail/atomic_file.h"
#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "lab/child_process.h"
#include "lab/cli.h"
#include "lab/text.h"

namespace lab {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// ---- The environment, checked like the command line ------------------------------------------------

int env_int(const char* name, int lo, int hi, std::optional<int> fallback) {
  const std::string v = env(name);
  if (v.empty()) {
    if (fallback) return *fallback;
    throw UsageError(fmt::format("{} is not set (it must be an integer from {} to {})", name, lo, hi));
  }
  const bool digits =
      v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long n = digits ? std::stol(v) : -1;
  if (!digits || n < lo || n > hi)
    throw UsageError(fmt::format("{} must be an integer from {} to {}, got {}", name, lo, hi, quote(v)));
  return static_cast<int>(n);
}

milliseconds rank_timeout() {
  const std::string v = env(kRankTimeoutVar);
  if (v.empty()) return std::chrono::seconds(30);
  char* end = nullptr;
  const bool plain =
      std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  const double s = plain ? std::strtod(v.c_str(), &end) : -1;
  if (!plain || end != v.c_str() + v.size() || !(s >= 0.1 && s <= 3600))
    throw UsageError(fmt::format("{} must be seconds from 0.1 to 3600, got {}", kRankTimeoutVar, quote(v)));
  return milliseconds(static_cast<int64_t>(s * 1000));
}

namespace {

// A host name (RFC 1123 letters, digits, '-', '.', and the '_' some networks use) or an IPv4/IPv6 address.
bool plausible_host(const std::string& h) {
  return !h.empty() && h.size() <= 253 && std::all_of(h.begin(), h.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == ':';
  });
}

}  // namespace

std::optional<JobEnv> job_env(int max_world) {
  if (std::getenv("RANK") == nullptr) return std::nullopt;
  JobEnv job;
  job.world = env_int("WORLD_SIZE", 2, max_world);
  job.rank = env_int("RANK", 0, job.world - 1);
  job.master_addr = env("MASTER_ADDR");
  if (!plausible_host(job.master_addr))
    throw UsageError("MASTER_ADDR must be a host name or an IP address, got " + quote(job.master_addr));
  job.master_port = env_int("MASTER_PORT", 1, 65535);
  job.agent_store = env("TORCHELASTIC_USE_AGENT_STORE") == "True";
  return job;
}

// ---- The store: every network wait under the deadline ----------------------------------------------

namespace {

int millis_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

std::string seconds(milliseconds t) {
  return fmt::format("{:g} s", t.count() / 1000.0);
}

// "rank 1 of 2", "ranks 1 and 3 of 4".
std::string ranks_of(const std::vector<int>& ranks, int world) {
  std::string list;
  for (size_t i = 0; i < ranks.size(); ++i)
    list += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return fmt::format("{} {} of {}", ranks.size() == 1 ? "rank" : "ranks", list, world);
}

// Runs `fn` on a thread of its own and waits until `deadline` for it. A call still running then is left
// to finish on its own (a resolver waiting for DNS, a handshake with a peer that never answers): nothing
// waits for it, and its result is dropped. nullopt: it did not finish in time.
template <class T>
std::optional<T> within(Clock::time_point deadline, std::function<T()> fn) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> result = promise->get_future();
  std::thread([promise, fn = std::move(fn)] {
    try {
      promise->set_value(fn());
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  if (result.wait_until(deadline) != std::future_status::ready) return std::nullopt;
  return result.get();
}

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

std::vector<Address> resolve(const std::string& host, int port, Clock::time_point deadline,
                             milliseconds timeout) {
  auto lookup = [host, port] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int err = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (err != 0) throw std::runtime_error(gai_strerror(err));
    std::vector<Address> out;
    for (addrinfo* a = res; a; a = a->ai_next) {
      Address x;
      std::memcpy(&x.addr, a->ai_addr, a->ai_addrlen);
      x.len = a->ai_addrlen;
      out.push_back(x);
    }
    freeaddrinfo(res);
    return out;
  };
  try {
    auto found = within<std::vector<Address>>(deadline, lookup);
    if (!found) throw std::runtime_error(fmt::format("no answer within {}", seconds(timeout)));
    return *found;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("cannot resolve the store's host {}: {}", quote(host), e.what()));
  }
}

// A connected socket to one of `addrs`, or -1 (errno_out: the last error) when none accepts right now.
int try_connect(const std::vector<Address>& addrs, Clock::time_point deadline, int* errno_out) {
  for (const Address& a : addrs) {
    const int fd = socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *errno_out = errno;
      continue;
    }
    int err = connect(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      err = poll(&p, 1, std::min(millis_left(deadline), 1000)) == 1 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) return fd;
    *errno_out = err;
    close(fd);
  }
  return -1;
}

// Reads exactly `n` bytes before the deadline: 1 done, 0 the peer closed, -1 the deadline passed.
int read_exactly(int fd, void* buf, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, millis_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return -1;
    const ssize_t got = read(fd, p, n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return 0;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return 1;
}

// What a c10d TCPStore client sends first (TCPStore.cpp): VALIDATE with the magic number, then PING with
// a nonce, which the server sends back. Checked here with a deadline, because the client's own wait for
// the ping's answer has none (a listener that accepts and never answers holds it forever).
void check_store_answers(const std::string& host, int port, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = quote(fmt::format("{}:{}", host, port));
  const std::vector<Address> addrs = resolve(host, port, deadline, timeout);
  int fd = -1, last_errno = 0;
  while ((fd = try_connect(addrs, deadline, &last_errno)) < 0) {  // rank 0 may not listen yet
    if (Clock::now() >= deadline)
      throw std::runtime_error(
          fmt::format("no store accepted a connection at {} within {} ({}): is rank 0 running?", where,
                      seconds(timeout), std::strerror(last_errno)));
    std::this_thread::sleep_for(milliseconds(std::min(100, millis_left(deadline))));
  }
  using c10d::detail::QueryType;
  const uint32_t nonce = static_cast<uint32_t>(getpid());
  uint8_t hello[10];
  hello[0] = static_cast<uint8_t>(QueryType::VALIDATE);
  std::memcpy(hello + 1, &c10d::detail::validationMagicNumber, 4);
  hello[5] = static_cast<uint8_t>(QueryType::PING);
  std::memcpy(hello + 6, &nonce, 4);
  uint32_t echoed = 0;
  const bool sent = send(fd, hello, sizeof hello, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof hello);
  const int got = sent ? read_exactly(fd, &echoed, sizeof echoed, deadline) : 0;
  close(fd);
  if (got < 0)
    throw std::runtime_error(fmt::format(
        "the store at {} accepted the connection but did not answer within {}: is it rank 0's TCPStore?",
        where, seconds(timeout)));
  if (got == 0 || echoed != nonce)
    throw std::runtime_error(fmt::format(
        "the server at {} does not answer as a c10d TCPStore does (closed or wrong reply)", where));
}

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, bool server,
                                              milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = server;
  o.waitWorkers = false;
  o.timeout = timeout;
  if (server) {
    try {
      return c10::make_intrusive<c10d::TCPStore>(host, o);
    } catch (const std::exception& e) {  // c10d's text names its socket internals; the cause, said plainly
      const std::string what = one_line(e);
      throw std::runtime_error(fmt::format(
          "cannot host the store on port {}: {}", port,
          what.find("EADDRINUSE") != std::string::npos ? "it is in use (another MASTER_PORT?)" : what));
    }
  }
  check_store_answers(host, port, timeout);
  // The store answered; its client now makes the same handshake, still under a deadline of its own.
  const auto deadline = Clock::now() + timeout;
  std::function<c10::intrusive_ptr<c10d::Store>()> make = [host, o] {
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::TCPStore>(host, o));
  };
  try {
    if (auto store = within(deadline, make)) return *store;
  } catch (const std::exception& e) {
    throw std::runtime_error("connecting to the store failed: " + one_line(e));
  }
  throw std::runtime_error(fmt::format("the store at {} stopped answering during the handshake ({})",
                                       quote(fmt::format("{}:{}", host, port)), seconds(timeout)));
}

int store_port(c10d::Store& store) {
  return static_cast<c10d::TCPStore&>(store).getPort();
}

// ---- The program a rank runs ------------------------------------------------------------------------

RankProgram rank_program(const std::string& id) {
  namespace fs = std::filesystem;
  const LabDecl* decl = find_decl(id);
  if (!decl) throw std::logic_error("rank_program: no lab " + quote(id) + " in labs/catalog.cpp");
  const std::string executable = decl->executable();
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && self.filename() == executable) return {self.string(), {}};
  if (!ec && lab_main_id() == id) return {self.string(), {}};  // an exercise's executable: its own code
  for (const fs::path& candidate :
       {self.parent_path() / executable, fs::path(AMP_LAB_BINARY_DIR) / "bin" / executable})
    if (!ec && access(candidate.c_str(), X_OK) == 0) return {candidate.string(), {}};
  if (!ec && self.filename() == "amp-lab") return {self.string(), {"run", id}};
  throw std::runtime_error(
      fmt::format("the ranks run {}, which is neither beside {} nor in {}/bin: build it "
                  "(cmake --build build --target {})",
                  executable, escape(self.string()), AMP_LAB_BINARY_DIR, executable));
}

// ---- The rank processes -----------------------------------------------------------------------------

namespace {

constexpr size_t kErrTail = 8192;  // what is kept of a rank's stderr: its last 8 KB, for last_words()

// The last line a rank printed, without the "<program>: lab failed: " its command line puts first.
std::string last_words(const Child& r) {
  std::string s = r.err();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  s = s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  if (const auto at = s.find(": lab failed: "); at != std::string::npos) s = s.substr(at + 14);
  if (s.rfind("[", 0) == 0 && s.find("] ") != std::string::npos)
    s = s.substr(s.find("] ") + 2);  // Gloo's [file:line]
  return s.empty() ? "(it printed nothing)" : safe_line(s, 240);
}

std::string signal_name(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

// Ended by a signal or with an exit code above 1 (0 and 1 are its checks' verdict).
bool failed(const Child& r) {
  const ChildStatus& s = r.status();
  return s.ended && (s.term_signal != 0 || s.exit_code > 1);
}

// Who is to blame, in one line, once some rank failed and the others had their grace period, or a rank
// stopped answering. `no_values`: ranks that finished without handing back their values; `late`: ranks
// still running `timeout` after a peer finished.
std::string blame(const std::vector<Child>& ranks, const std::vector<int>& no_values, bool late,
                  milliseconds timeout) {
  const int world = static_cast<int>(ranks.size());
  if (!no_values.empty())
    return fmt::format("{} ended (exit code {}) without handing back its values: did the code exit early?",
                       ranks_of(no_values, world), ranks[no_values.front()].status().exit_code);
  for (int r = 0; r < world; ++r)
    if (const int signo = ranks[r].status().term_signal)
      return fmt::format("rank {} of {} was killed by signal {} ({})", r, world, signo, strsignal(signo));
  int first_failed = -1;
  std::vector<int> stopped, silent;
  for (int r = 0; r < world; ++r) {
    if (failed(ranks[r]) && first_failed < 0) first_failed = r;
    if (!ranks[r].status().ended) (ranks[r].status().paused ? stopped : silent).push_back(r);
  }
  const std::string peer =
      first_failed < 0 ? "" : fmt::format("; rank {}: {}", first_failed, last_words(ranks[first_failed]));
  if (!stopped.empty()) return ranks_of(stopped, world) + " stopped answering (stopped by a signal)" + peer;
  if (!silent.empty() && late && first_failed < 0)
    return ranks_of(silent, world) +
           fmt::format(" stopped answering (still running {} after a peer finished)", seconds(timeout));
  if (!silent.empty())
    return ranks_of(silent, world) + " stopped answering (still running after its peers gave up)" + peer;
  const Child& r = ranks[first_failed];
  if (r.status().exit_code == 127 && r.err().empty())  // exec failed (status().exec_errno)
    return fmt::format("rank {} of {} could not be started (exec failed, exit code 127)", first_failed,
                       world);
  return fmt::format("rank {} of {} failed (exit code {}): {}", first_failed, world, r.status().exit_code,
                     last_words(r));
}

void write_pids(const std::string& path, const std::vector<Child>& ranks) {
  std::string text;
  for (const Child& r : ranks) text += std::to_string(r.pid()) + "\n";
  try {
    amp::detail::write_file_atomically(path, text);
  } catch (const amp::detail::AtomicFileError& e) {
    throw std::runtime_error("cannot write the ranks' process ids to " + quote(path) + ": " +
                             e.code().message());
  }
}

// stdin and stdout on /dev/null, stderr read by this process (its last 8 KB kept), killed (SIGKILL) when
// this process dies. lab::Child execs, never a bare fork(): a lab also runs inside amp-lab and the test
// binaries, whose OpenMP and intra-op thread pools do not survive fork().
Child start_rank(const RankProgram& program, std::vector<std::string> vars) {
  ChildSpec spec{.argv = {program.path},
                 .env = std::move(vars),
                 .in = Stream::null(),
                 .out = Stream::null(),
                 .err = Stream::capture(kErrTail, /*keep_tail=*/true),
                 .death_signal = SIGKILL};
  spec.argv.insert(spec.argv.end(), program.args.begin(), program.args.end());
  try {
    return Child(spec);
  } catch (const SpawnError& e) {
    throw std::runtime_error(std::string("could not start a rank: ") + e.what());
  }
}

}  // namespace

void spawn_ranks(const SpawnOptions& o) {
  // Whatever a rank starts is handed to this process when the rank ends, and killed with the rest when
  // the call ends, however it ends (declared first: it runs after the ranks' own destructors).
  become_subreaper();
  struct EndDescendants {
    ~EndDescendants() { end_descendants(); }
  } end_descendants_after;
  const milliseconds timeout = o.rank_timeout ? *o.rank_timeout : rank_timeout();
  std::vector<Child> ranks;  // however the call ends, each one still running is killed with its group
  ranks.reserve(static_cast<size_t>(o.world));
  for (int rank = 0; rank < o.world; ++rank) ranks.push_back(start_rank(o.program, o.vars_of(rank)));
  constexpr auto kGrace = milliseconds(2000);  // after a failure, for the healthy peers to fail too
  std::optional<Clock::time_point> first_failure, first_finished;
  std::vector<std::optional<Clock::time_point>> paused_since(ranks.size());
  std::vector<bool> asked(ranks.size(), false);
  std::vector<int> no_values;
  bool pids_written = o.pids_file.empty(), late = false;
  // After each look at the ranks: false (blame now) once one has failed and one was killed or is paused,
  // all have ended, or the others had their grace; once one finished without its values; once one was
  // paused, or still ran after a peer finished, for longer than the rank timeout.
  const auto keep_waiting = [&] {
    // Written from inside the wait, once the stop signals are caught: whoever signals this process once it
    // has read them finds the ranks stopped and Interrupted thrown.
    if (!pids_written) write_pids(o.pids_file, ranks), pids_written = true;
    const auto now = Clock::now();
    bool killed = false, paused = false, all_ended = true, stuck = false;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const ChildStatus& st = ranks[i].status();
      killed |= st.term_signal != 0;
      paused |= st.paused;
      all_ended &= st.ended;
      if (failed(ranks[i]) && !first_failure) first_failure = now;
      paused_since[i] = st.paused ? paused_since[i].value_or(now) : std::optional<Clock::time_point>();
      stuck |= paused_since[i] && now - *paused_since[i] > timeout;
      if (st.ended && !failed(ranks[i]) && !asked[i]) {
        asked[i] = true;
        if (!first_finished) first_finished = now;
        if (o.handed_back && !o.handed_back(static_cast<int>(i))) no_values.push_back(static_cast<int>(i));
      }
    }
    late = !all_ended && first_finished && now - *first_finished > timeout;
    if (!no_values.empty() || stuck || late) return false;
    return !(first_failure && (killed || paused || all_ended || now - *first_failure > kGrace));
  };
  // SIGINT, SIGTERM and SIGHUP, unless the program has a handler of its own for it (amp-lab's, which lets
  // the lab finish): the ranks get it, then SIGKILL at once.
  const WaitEnd end = wait_for(ranks, {.deadline = o.deadline,
                                       .forward = Forward::Unhandled,
                                       .reraise = false,
                                       .grace = milliseconds(0),
                                       .tick = keep_waiting,
                                       .interval = milliseconds(20)});
  if (end == WaitEnd::Signalled) {
    int signo = 0;  // what went on to the ranks still running then
    for (const Child& r : ranks) signo = signo ? signo : r.status().stop_signal;
    throw Interrupted(
        fmt::format("interrupted by {}: its {} ranks were stopped", signal_name(signo), o.world), signo);
  }
  if (end == WaitEnd::TimedOut)
    throw std::runtime_error(fmt::format("ranks still running after {} s: stopped", o.deadline.count()));
  if (end == WaitEnd::Cancelled || std::any_of(ranks.begin(), ranks.end(), failed))
    throw std::runtime_error(blame(ranks, no_values, late, timeout));
}

// ---- Values through the store -----------------------------------------------------------------------

void store_set(c10d::Store& store, const std::string& key, const void* data, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(data);
  store.set(key, std::vector<uint8_t>(b, b + bytes));
}

namespace {

// The key's value, once it is there; a store that has none within its timeout is one line.
std::vector<uint8_t> store_get(c10d::Store& store, const std::string& key) {
  try {
    store.wait({key});
    return store.get(key);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("the store had no {} within {}: {}", quote(key),
                                         seconds(store.getTimeout()), one_line(e)));
  }
}

}  // namespace

std::vector<float> store_get_floats(c10d::Store& store, const std::string& key) {
  const auto v = store_get(store, key);
  return {reinterpret_cast<const float*>(v.data()), reinterpret_cast<const float*>(v.data() + v.size())};
}

std::string store_get_string(c10d::Store& store, const std::string& key) {
  const auto v = store_get(store, key);
  return {v.begin(), v.end()};
}

void store_barrier(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key, int rank, int world,
                   milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // On a thread of its own, given up at the deadline: the store's calls have none of their own (job_failure).
  std::function<bool()> count_in = [store, key, rank, world, deadline] {
    store->add(key, 1);
    while (rank == 0 && store->add(key, 0) < world) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  };
  const std::optional<bool> done = within(deadline + milliseconds(500), count_in);
  if (!done && rank != 0)
    throw std::runtime_error(fmt::format("rank 0 of {} stopped answering (its store, nothing within {})",
                                         world, seconds(timeout)));
  if (!done || !*done)
    throw std::runtime_error(fmt::format("not every rank had read the results after {}", seconds(timeout)));
}

// ---- One rank of a job: who is at fault ----------------------------------------------------------------

void quiet_c10d_warnings() {
  // c10d's logger consults c10's level (torch/csrc/distributed/c10d/logging.cpp): 2 is ERROR and above.
  FLAGS_caffe2_log_level = std::max(FLAGS_caffe2_log_level, 2);
}

namespace {

// Sets `what`/<rank>, then waits until `deadline` for every other rank's; returns the ranks missing then.
std::vector<int> missing_ranks(c10d::Store& store, const std::string& what, int rank, int world,
                               Clock::time_point deadline) {
  store.set(fmt::format("amp-lab/job/{}/{}", what, rank), std::vector<uint8_t>{1});
  std::vector<int> missing;
  for (;;) {
    missing.clear();
    for (int r = 0; r < world; ++r)
      if (r != rank && !store.check({fmt::format("amp-lab/job/{}/{}", what, r)})) missing.push_back(r);
    if (missing.empty() || Clock::now() >= deadline) return missing;
    std::this_thread::sleep_for(milliseconds(std::min(50, millis_left(deadline))));
  }
}

// e's line without a leading "[/path/to/gloo/...cc:78] ".
std::string without_source_path(const std::exception& e) {
  std::string line = one_line(e);
  if (line.rfind("[", 0) == 0 && line.find(".cc:") < line.find("] ") && line.find("] ") != std::string::npos)
    line = line.substr(line.find("] ") + 2);
  return line;
}

}  // namespace

void await_ranks(c10d::Store& store, int rank, int world, milliseconds timeout) {
  const std::vector<int> missing = missing_ranks(store, "here", rank, world, Clock::now() + timeout);
  if (!missing.empty())
    throw std::runtime_error(fmt::format(
        "{} did not come within {}: is it running, with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE?",
        ranks_of(missing, world), seconds(timeout)));
}

std::string job_failure(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                        milliseconds timeout, const std::exception& e) {
  std::vector<int> silent;
  // The store's own calls wait for its answer without a deadline (a store in a paused rank 0 never
  // answers): asked on a thread of their own, which keeps the store alive, and given up at the deadline.
  // Rank 0 hosts the store: it stays until every rank that answered has its own answer (or the rank
  // timeout passes again), so that none of them takes the store's going for rank 0's fault.
  const auto deadline = Clock::now() + timeout;
  std::function<std::vector<int>()> ask = [store, rank, world, deadline, timeout] {
    std::vector<int> missing = missing_ranks(*store, "alive", rank, world, deadline);
    store->set(fmt::format("amp-lab/job/told/{}", rank), std::vector<uint8_t>{1});
    for (const auto until = deadline + timeout; rank == 0 && Clock::now() < until;) {
      bool waiting = false;
      for (int r = 1; r < world && !waiting; ++r)
        waiting = std::find(missing.begin(), missing.end(), r) == missing.end() &&
                  !store->check({fmt::format("amp-lab/job/told/{}", r)});
      if (!waiting) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return missing;
  };
  try {
    if (auto answered = within(deadline + (rank == 0 ? timeout : milliseconds(0)) + milliseconds(500), ask))
      silent = *answered;
    else if (rank != 0)
      silent = {0};
  } catch (const std::exception&) {  // the store itself does not answer: rank 0 hosts it
    if (rank != 0) silent = {0};
  }
  if (silent.empty()) return without_source_path(e);
  return fmt::format("{} stopped answering (nothing from it within {})", ranks_of(silent, world),
                     seconds(timeout));
}

}  // namespace lab
