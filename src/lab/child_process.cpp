#include "lab/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

namespace lab {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void spawn_error(const std::string& what, int error) {
  throw SpawnError(what + ": " + std::strerror(error));
}

// `fd` moved above the standard three (close-on-exec), so that the child's dup2() onto 0, 1 and 2 never
// overwrites a descriptor it still has to move: this process may have started with one of them closed.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int error = errno;
  ::close(fd);
  errno = error;
  return moved;
}

// Descriptors closed when the start is over, however it ends.
struct Closer {
  std::vector<int> fds;
  int keep(int fd) {
    if (fd >= 0) fds.push_back(fd);
    return fd;
  }
  void release(int fd) { std::erase(fds, fd); }
  ~Closer() {
    for (int fd : fds) ::close(fd);
  }
};

// The descriptor the child gets for one stream (-1: this process's own). A Capture stream's read end, the
// parent's, goes to `*read_end`.
int child_end(const Stream& s, bool input, Closer& fds, int* read_end) {
  int fd = -1;
  switch (s.kind) {
    case Stream::Kind::Inherit:
      return -1;
    case Stream::Kind::File:
      fd = input ? ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC)
                 : ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) spawn_error("cannot open " + s.path, errno);
      break;
    case Stream::Kind::Capture:
      if (!input) {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) spawn_error("pipe", errno);
        *read_end = fds.keep(above_stdio(p[0]));
        ::fcntl(*read_end, F_SETFL, O_NONBLOCK);
        fd = p[1];
        break;
      }
      [[fallthrough]];  // nothing to capture on stdin: /dev/null
    case Stream::Kind::Null:
      fd = ::open("/dev/null", (input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (fd < 0) spawn_error("cannot open /dev/null", errno);
      break;
  }
  fd = above_stdio(fd);
  if (fd < 0) spawn_error("cannot move a descriptor", errno);
  return fds.keep(fd);
}

// This process's environment with `vars` ("NAME=value") set over it.
std::vector<std::string> environment_with(std::vector<std::string> vars) {
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    const size_t n = eq ? static_cast<size_t>(eq - *e) + 1 : 0;
    bool replaced = false;
    for (const auto& v : vars) replaced |= n > 0 && v.compare(0, n, *e, n) == 0;
    if (!replaced) vars.emplace_back(*e);
  }
  return vars;
}

// In the child, between fork() and exec(): async-signal-safe calls only.
[[noreturn]] void exec_child(const ChildSpec& spec, pid_t parent, const int (&to)[3],
                             const std::vector<std::pair<int, int>>& passed, char** argv, char** envp,
                             int status_fd) {
  ::setpgid(0, 0);  // a group of its own: the terminal's Ctrl-C reaches the parent alone
  if (spec.death_signal) {
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the line above
  }
  // The parent's handlers must not run here: each signal it handles goes back to its default (exec would
  // do that too, but a signal may come first). Ignored ones stay ignored, as exec keeps them.
  for (int signo = 1; signo < NSIG; ++signo) {
    struct sigaction now {};
    if (::sigaction(signo, nullptr, &now) != 0) continue;
    const bool handled = (now.sa_flags & SA_SIGINFO) ? now.sa_sigaction != nullptr
                                                     : now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN;
    if (handled) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(signo, &dfl, nullptr);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int i = 0; i < 3; ++i)
    if (to[i] >= 0) ::dup2(to[i], i);
  for (const auto& [from, as] : passed)  // `from` is above every `as`: no dup2 overwrites one still to come
    if (::dup2(from, as) < 0) ::_exit(127);
  if (std::strchr(argv[0], '/'))
    ::execve(argv[0], argv, envp);
  else
    ::execvpe(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] const ssize_t n = ::write(status_fd, &error, sizeof error);
  ::_exit(127);
}

void append_capped(std::string& sink, const char* data, size_t n, const Stream& s) {
  sink.append(data, n);
  if (s.limit == 0 || sink.size() <= s.limit) return;
  if (s.keep_tail)
    sink.erase(0, sink.size() - s.limit);
  else
    sink.resize(s.limit + 1);  // one byte over: there was more than the reader takes
}

// Reads what is there, at most `max_reads` times 64 KB, so that a child that writes without pause cannot
// keep the wait from its signals and deadline.
void drain(int& fd, std::string& sink, const Stream& s, int max_reads) {
  char buf[65536];
  for (int reads = 0; fd >= 0 && reads < max_reads; ++reads) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      append_capped(sink, buf, static_cast<size_t>(got), s);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;
    ::close(fd);  // the end, or an error: nothing more comes
    fd = -1;
  }
}

// ---- Signals passed on ------------------------------------------------------------------------------

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumStopSignals = 3;
struct sigaction g_before[kNumStopSignals];
bool g_installed[kNumStopSignals];
volatile sig_atomic_t g_last_signal = 0;
volatile sig_atomic_t g_signals = 0;  // how many came during this wait

bool is_program_handler(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) ? a.sa_sigaction != nullptr
                                   : a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

void on_stop_signal(int signo, siginfo_t* info, void* context) {
  g_last_signal = signo;
  g_signals = g_signals + 1;
  for (int i = 0; i < kNumStopSignals; ++i) {
    if (kStopSignals[i] != signo || !is_program_handler(g_before[i])) continue;
    if (g_before[i].sa_flags & SA_SIGINFO)  // the program's own handler still hears of it
      g_before[i].sa_sigaction(signo, info, context);
    else
      g_before[i].sa_handler(signo);
  }
}

// Our handler in front of SIGINT, SIGTERM and SIGHUP while wait_for() runs, as `mode` asks; an ignored signal
// stays ignored.
class Forwarding {
 public:
  explicit Forwarding(Forward mode) {
    g_last_signal = 0;
    g_signals = 0;
    for (int i = 0; i < kNumStopSignals; ++i) {
      g_installed[i] = false;
      if (mode == Forward::None || ::sigaction(kStopSignals[i], nullptr, &g_before[i]) != 0) continue;
      if (!(g_before[i].sa_flags & SA_SIGINFO) && g_before[i].sa_handler == SIG_IGN) continue;
      if (mode == Forward::Unhandled && is_program_handler(g_before[i])) continue;
      struct sigaction ours {};
      ours.sa_sigaction = on_stop_signal;
      ours.sa_flags = SA_SIGINFO;  // no SA_RESTART: the wait's poll() returns, and the signal goes on at once
      sigemptyset(&ours.sa_mask);
      g_installed[i] = ::sigaction(kStopSignals[i], &ours, nullptr) == 0;
    }
  }
  ~Forwarding() { restore(); }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

  void restore() {
    for (int i = 0; i < kNumStopSignals; ++i)
      if (g_installed[i]) ::sigaction(kStopSignals[i], &g_before[i], nullptr);
    std::fill(std::begin(g_installed), std::end(g_installed), false);
  }
  // Whether `signo` came to our handler in place of its default action (ending this process).
  bool was_default(int signo) const {
    for (int i = 0; i < kNumStopSignals; ++i)
      if (kStopSignals[i] == signo && g_installed[i]) return !is_program_handler(g_before[i]);
    return false;
  }
};

// Waits up to `interval` for output from any child, or a signal.
void one_round(const std::vector<int>& fds, std::chrono::milliseconds interval) {
  std::vector<pollfd> polled;
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  ::poll(polled.empty() ? nullptr : polled.data(), polled.size(), static_cast<int>(interval.count()));
}

}  // namespace

// ---- Child ------------------------------------------------------------------------------------------

Child::Child(const ChildSpec& spec) : out_spec_(spec.out), err_spec_(spec.err) {
  if (spec.argv.empty() || spec.argv[0].empty()) throw SpawnError("no program to run");
  Closer fds;
  int to[3] = {child_end(spec.in, true, fds, nullptr), child_end(spec.out, false, fds, &out_fd_),
               child_end(spec.err, false, fds, &err_fd_)};
  // Each passed descriptor copied above every number the child gets, so that no dup2() there overwrites
  // one it has still to move.
  int highest = 2;
  for (const auto& [from, as] : spec.pass_fds) {
    if (as <= 2 || from < 0) throw SpawnError("a descriptor passed on must go above 2");
    highest = std::max(highest, as);
  }
  std::vector<std::pair<int, int>> passed;
  for (const auto& [from, as] : spec.pass_fds) {
    const int copy = fds.keep(::fcntl(from, F_DUPFD_CLOEXEC, highest + 1));
    if (copy < 0) spawn_error("cannot pass a descriptor on", errno);
    passed.emplace_back(copy, as);
  }
  int status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) spawn_error("pipe", errno);
  fds.keep(status[0]);
  fds.keep(status[1]);
  std::vector<std::string> env_strings, argv_strings = spec.argv;
  std::vector<char*> envp, argv;
  if (!spec.env.empty()) {
    env_strings = environment_with(spec.env);
    for (auto& v : env_strings) envp.push_back(v.data());
    envp.push_back(nullptr);
  }
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Signals held until the child has put the parent's handlers away (exec_child).
  sigset_t all, before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(spec, parent, to, passed, argv.data(), envp.empty() ? environ : envp.data(), status[1]);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) spawn_error("cannot start " + spec.argv[0], fork_errno);
  pid_ = pid;
  ::setpgid(pid, pid);  // here too: whichever runs first, the group exists before it is signalled
  fds.release(out_fd_);
  fds.release(err_fd_);
  ::close(status[1]);
  fds.release(status[1]);
  int error = 0;
  ssize_t got;
  while ((got = ::read(status[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof error)) {  // exec failed: it has exited with 127
    status_.exec_errno = error;
    int ws = 0;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
    reap(ws);
  }
}

Child::~Child() {
  if (pid_ > 0 && !status_.ended) {
    ::kill(-pid_, SIGKILL);  // works on a paused one too
    int ws = 0;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
  }
  for (int fd : {out_fd_, err_fd_})
    if (fd >= 0) ::close(fd);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      out_spec_(std::move(other.out_spec_)),
      err_spec_(std::move(other.err_spec_)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      status_(other.status_) {
  other.status_.ended = true;
}

void Child::signal(int signo) {
  if (pid_ > 0 && !status_.ended) ::kill(-pid_, signo);
}

void Child::read_pipes(bool all) {
  // All: once it has exited, what is left is at most a pipe's buffer (64 KB, 1 MB at most unless raised)
  // plus what a process that left its group (setsid) writes meanwhile, which nothing waits for.
  drain(out_fd_, out_, out_spec_, all ? 64 : 16);
  drain(err_fd_, err_, err_spec_, all ? 64 : 16);
}

void Child::reap(int wait_status) {
  status_.ended = true;
  status_.paused = false;
  if (WIFEXITED(wait_status))
    status_.exit_code = WEXITSTATUS(wait_status);
  else if (WIFSIGNALED(wait_status))
    status_.term_signal = WTERMSIG(wait_status);
  // Everything it wrote is in the pipes by now; what is still open belongs to a process that left its
  // group (setsid), and nothing waits for that.
  read_pipes(/*all=*/true);
  for (int* fd : {&out_fd_, &err_fd_})
    if (*fd >= 0) ::close(std::exchange(*fd, -1));
}

bool Child::poll() {
  if (status_.ended) return true;
  read_pipes();
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return false;
    reap(0);  // ECHILD: reaped elsewhere (SIGCHLD ignored), its status lost
    status_.exit_code = -1;
    return true;
  }
  if (info.si_pid == pid_) {
    ::kill(-pid_, SIGKILL);  // what is left of its group, while the group's id cannot be reused
    int ws = 0;
    while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
    }
    reap(ws);
    return true;
  }
  info = {};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WCONTINUED | WNOHANG) == 0 &&
      info.si_pid == pid_)
    status_.paused = info.si_code != CLD_CONTINUED;
  return false;
}

// ---- wait_for ----------------------------------------------------------------------------------------

class ChildWaiter {
 public:
  ChildWaiter(Child* const* children, size_t n, const WaitOptions& o) : c_(children), n_(n), o_(o) {}

  WaitEnd run() {
    Forwarding forwarding(o_.forward);
    const auto start = Clock::now();
    sig_atomic_t seen = 0;
    int forwarded = 0;  // the first signal that came to our handler
    for (;;) {
      if (g_signals != seen) {  // each one goes on, a second Ctrl-C too
        seen = g_signals;
        if (!sent_) forwarded = g_last_signal;
        send(g_last_signal);
      }
      if (!sent_ && o_.stop)
        if (const int signo = o_.stop()) send(signo);
      if (sent_ && !killed_ && Clock::now() - sent_at_ >= o_.grace) kill_running(false);
      if (!sent_ && !timed_out_ && o_.deadline && Clock::now() - start >= *o_.deadline) kill_running(true);
      one_round(pipes(), o_.interval);
      bool all_ended = true;
      for (size_t i = 0; i < n_; ++i) all_ended &= c_[i]->poll();
      // Once a signal went on or the deadline passed, the wait ends as that says, whatever tick says.
      if (o_.tick && !o_.tick() && !sent_ && !timed_out_) return WaitEnd::Cancelled;
      if (all_ended) break;
    }
    // A signal that came in the round the last child ended has no one left to go to; it still ends the
    // wait as one that went on would, so the caller stops as it was asked.
    if (g_signals != seen && !sent_) forwarded = sent_ = g_last_signal;
    if (sent_ && sent_ == forwarded && o_.reraise && forwarding.was_default(sent_)) {
      forwarding.restore();
      ::raise(sent_);  // this process ends by it, as it would have without the children
    }
    return sent_ ? WaitEnd::Signalled : timed_out_ ? WaitEnd::TimedOut : WaitEnd::Ended;
  }

 private:
  void send(int signo) {
    for (size_t i = 0; i < n_; ++i) {
      if (c_[i]->status_.ended) continue;
      c_[i]->signal(signo);
      if (!c_[i]->status_.stop_signal) c_[i]->status_.stop_signal = signo;
    }
    if (!sent_) sent_ = signo, sent_at_ = Clock::now();
  }
  void kill_running(bool deadline) {
    for (size_t i = 0; i < n_; ++i) {
      if (c_[i]->status_.ended) continue;
      c_[i]->signal(SIGKILL);
      if (deadline) c_[i]->status_.timed_out = true;
    }
    (deadline ? timed_out_ : killed_) = true;
  }
  std::vector<int> pipes() const {
    std::vector<int> fds;
    for (size_t i = 0; i < n_; ++i)
      for (int fd : {c_[i]->out_fd_, c_[i]->err_fd_})
        if (fd >= 0) fds.push_back(fd);
    return fds;
  }

  Child* const* c_;
  size_t n_;
  const WaitOptions& o_;
  int sent_ = 0;
  Clock::time_point sent_at_;
  bool killed_ = false, timed_out_ = false;
};

WaitEnd wait_for(std::vector<Child>& children, const WaitOptions& options) {
  std::vector<Child*> all;
  for (Child& c : children) all.push_back(&c);
  return ChildWaiter(all.data(), all.size(), options).run();
}

WaitEnd wait_for(Child& child, const WaitOptions& options) {
  Child* one = &child;
  return ChildWaiter(&one, 1, options).run();
}

// ---- Descendants ------------------------------------------------------------------------------------

void become_subreaper() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

namespace {

// Every process below `root` now, from /proc: each process's parent, then the tree walked from the root.
std::vector<pid_t> descendants_of(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // {pid, ppid}
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // gone meanwhile
    const auto paren = line.rfind(')');       // the name may hold spaces and parentheses
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid) parent_of.emplace_back(static_cast<pid_t>(std::stol(name)), ppid);
  }
  std::vector<pid_t> found{root};
  for (size_t i = 0; i < found.size(); ++i)
    for (const auto& [pid, ppid] : parent_of)
      if (ppid == found[i]) found.push_back(pid);
  found.erase(found.begin());
  return found;
}

}  // namespace

int end_descendants() {
  const pid_t self = ::getpid();
  int killed = 0;
  for (int round = 0; round < 200; ++round) {
    const std::vector<pid_t> below = descendants_of(self);
    for (const pid_t pid : below) killed += ::kill(pid, SIGKILL) == 0;
    // Our own children (the killed ones' orphans come to us too) are reaped, until none is left.
    int ws = 0;
    while (::waitpid(-1, &ws, WNOHANG) > 0) {
    }
    if (below.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // for SIGKILL to land and orphans to move
  }
  return killed;
}

}  // namespace lab
