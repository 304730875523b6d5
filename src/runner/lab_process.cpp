#include "runner/lab_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lab/text.h"
#include "runner/interrupt.h"

namespace runner {
namespace {

constexpr double kGraceS = 3.0;               // after the stop signal, a lab has this long before SIGKILL
constexpr size_t kMaxReportBytes = 64 << 20;  // a report larger than this is not a report
constexpr size_t kMaxStderrBytes = 64 << 10;  // the tail of stderr kept for the one-line message

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string lab_name(const lab::LabDecl& decl) {
  return fmt::format("lab {:02d} {}", decl.number, decl.id);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

LiveLine::LiveLine(std::ostream& out, bool enabled, std::string text, double delay_s)
    : out_(out), enabled_(enabled), text_(std::move(text)), delay_s_(delay_s), start_(now_s()) {}

LiveLine::~LiveLine() {
  clear();
}

void LiveLine::tick() {
  const double elapsed = now_s() - start_;
  if (!enabled_ || elapsed < delay_s_) return;
  const int tenths = static_cast<int>(elapsed * 10);
  if (tenths == shown_tenths_) return;
  const std::string line = fmt::format("{}... {:.1f} s", text_, tenths / 10.0);
  set_progress_shown(true);
  // Spaces erase what a longer line left; no escape sequence, so a dumb terminal shows it as well.
  const size_t width = lab::display_width(line);
  out_ << "\r" << line << std::string(shown_width_ > width ? shown_width_ - width : 0, ' ') << std::flush;
  shown_width_ = std::max(shown_width_, width);
  shown_tenths_ = tenths;
}

void LiveLine::clear() {
  if (!shown_width_) return;
  out_ << "\r" << std::string(shown_width_, ' ') << "\r" << std::flush;
  shown_width_ = 0;
  shown_tenths_ = -1;
  set_progress_shown(false);
}

std::string lab_folder() {
  if (const char* dir = std::getenv("AMP_LAB_LAB_DIR"); dir && *dir) return dir;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string lab_path(const lab::LabDecl& decl) {
  return lab_folder() + "/" + decl.executable();
}

std::optional<LabOutcome> wait_for_build(const lab::LabDecl& decl, std::ostream& out, bool live) {
  const char* dir = std::getenv("AMP_LAB_BUILD_AHEAD");
  if (!dir || !*dir) return std::nullopt;
  const std::string status = std::string(dir) + "/" + decl.executable();
  const std::string log = read_small_file(std::string(dir) + "/log");
  LiveLine line(out, live, "building " + lab_name(decl), /*delay_s=*/0.0);
  LabOutcome why;
  why.kind = LabOutcome::Kind::NotBuilt;
  for (;;) {
    if (exists(status + ".ok")) return std::nullopt;
    if (exists(status + ".failed")) {
      why.message = fmt::format("{} did not build (see {})", lab_name(decl), lab::escape(log));
      return why;
    }
    const std::string builder = read_small_file(std::string(dir) + "/builder.pid");
    const int pid = std::atoi(builder.c_str());
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) {
      if (exists(status + ".ok")) return std::nullopt;  // it finished just now
      why.message = fmt::format("{} was not built: the background build ended first (see {})", lab_name(decl),
                                lab::escape(log));
      return why;
    }
    if (interrupt_signal()) {
      why.kind = LabOutcome::Kind::Interrupted;
      why.message = fmt::format("stopped while {} was being built", lab_name(decl));
      return why;
    }
    line.tick();
    ::poll(nullptr, 0, 100);
  }
}

namespace {

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
  int exec_errno = 0;  // why execv failed, 0 when it ran
};

// Forks the lab into a process group of its own, so the terminal's Ctrl-C reaches the runner alone and
// the runner decides when the lab stops; stdin is /dev/null.
Child spawn(const std::string& path, const std::vector<std::string>& args) {
  int out[2], err[2], status[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    // Should the runner die without stopping it (SIGKILL), the lab is told to stop: no orphan lab.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(path.c_str(), argv.data());
    const int e = errno;
    [[maybe_unused]] ssize_t n = ::write(status[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before it is signalled
  ::close(out[1]);
  ::close(err[1]);
  ::close(status[1]);
  Child c{pid, out[0], err[0], 0};
  int e = 0;
  if (::read(status[0], &e, sizeof e) == static_cast<ssize_t>(sizeof e)) c.exec_errno = e;
  ::close(status[0]);
  return c;
}

struct Collected {
  std::string out, err;
  int status = 0;
  bool stopped = false;  // the runner signalled the lab's group
};

// Sends the stop signal to the lab's group once the walk is told to stop now, and SIGKILL after the grace.
class Stopper {
 public:
  explicit Stopper(pid_t group) : group_(group) {}
  void poll() {
    if (!stop_lab_now()) return;
    if (!sent_) {
      ::kill(-group_, interrupt_signal() ? interrupt_signal() : SIGTERM);
      sent_ = true;
      sent_at_ = now_s();
    } else if (!killed_ && now_s() - sent_at_ > kGraceS) {
      ::kill(-group_, SIGKILL);
      killed_ = true;
    }
  }
  bool sent() const { return sent_; }

 private:
  pid_t group_;
  bool sent_ = false, killed_ = false;
  double sent_at_ = 0;
};

void append_capped(std::string& sink, const char* data, size_t n, size_t cap, bool keep_tail) {
  sink.append(data, n);
  if (sink.size() > cap && keep_tail) sink.erase(0, sink.size() - cap);
  if (sink.size() > cap && !keep_tail) sink.resize(cap + 1);  // one byte over: too big, not a report
}

// Reads both pipes until they close, then waits for the lab to exit. Before it is reaped (its pid and group
// cannot be reused while it is a zombie) whatever is left in its group is killed: no process outlives a lab.
Collected collect(const Child& child, LiveLine& line) {
  Collected c;
  Stopper stopper(child.pid);
  pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
  for (int open = 2; open > 0;) {
    stopper.poll();
    line.tick();
    if (::poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        append_capped(i == 0 ? c.out : c.err, buf, static_cast<size_t>(got),
                      i == 0 ? kMaxReportBytes : kMaxStderrBytes, /*keep_tail=*/i == 1);
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  siginfo_t info{};
  for (;;) {
    stopper.poll();
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid)
      break;
    if (errno == ECHILD) break;
    line.tick();
    ::poll(nullptr, 0, 50);
  }
  ::kill(-child.pid, SIGKILL);
  while (::waitpid(child.pid, &c.status, 0) < 0 && errno == EINTR) {
  }
  c.stopped = stopper.sent();
  return c;
}

// The last line the lab wrote on stderr, without its program name and "lab failed: ".
std::string last_line(const std::string& err, const lab::LabDecl& decl) {
  std::istringstream in(err);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  for (const std::string& prefix : {decl.executable() + ": ", std::string("lab failed: ")})
    if (last.rfind(prefix, 0) == 0) last.erase(0, prefix.size());
  return lab::safe_line(last, 300);
}

std::vector<std::string> notices_of(const std::string& err) {
  std::vector<std::string> notices;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("auto: ", 0) == 0) notices.push_back(lab::safe_line(line, 200));
  return notices;
}

void read_report(LabOutcome& o, const std::string& out) {
  try {
    if (out.size() > kMaxReportBytes) throw std::invalid_argument("more than 64 MB of output");
    const nlohmann::json j = nlohmann::json::parse(out);
    o.report = lab::Report::from_json(j);
    o.kind = LabOutcome::Kind::Report;
  } catch (const std::exception& e) {
    o.kind = LabOutcome::Kind::Failed;
    o.message = "it printed no readable report (" + lab::safe_line(e.what(), 120) + ")";
  }
}

void interpret(LabOutcome& o, const Collected& c, const lab::LabDecl& decl) {
  const bool signalled = WIFSIGNALED(c.status);
  o.exit_code = signalled ? 128 + WTERMSIG(c.status) : WEXITSTATUS(c.status);
  if (c.stopped) {
    o.kind = LabOutcome::Kind::Interrupted;
    o.message = fmt::format("{} was stopped ({})", lab_name(decl), interrupt_reason());
  } else if (signalled) {
    o.kind = LabOutcome::Kind::Crashed;
    o.message = fmt::format("{} crashed: killed by signal {} ({})", lab_name(decl), WTERMSIG(c.status),
                            strsignal(WTERMSIG(c.status)));
  } else if (o.exit_code == 0 || o.exit_code == 1) {
    read_report(o, c.out);
    o.notices = notices_of(c.err);
  } else {
    o.kind = o.exit_code == 2 ? LabOutcome::Kind::Usage : LabOutcome::Kind::Failed;
    const std::string said = last_line(c.err, decl);
    o.message = said.empty() ? fmt::format("it exited with code {} and said nothing", o.exit_code) : said;
  }
}

}  // namespace

LabOutcome run_lab_process(const lab::LabDecl& decl, const std::vector<std::string>& flags, std::ostream& out,
                           bool live) {
  const double start = now_s();
  LabOutcome o;
  const std::string path = lab_path(decl);
  std::vector<std::string> args{path, "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  LiveLine line(out, live, "running " + lab_name(decl));
  const Child child = spawn(path, args);
  set_lab_running(child.pid);
  const Collected c = collect(child, line);
  set_lab_running(0);
  line.clear();
  o.seconds = now_s() - start;
  if (child.exec_errno) {
    o.kind = child.exec_errno == ENOENT ? LabOutcome::Kind::NotBuilt : LabOutcome::Kind::Failed;
    o.message = fmt::format("cannot run {}: {}", lab::quote(path, 200), std::strerror(child.exec_errno));
    if (child.exec_errno == ENOENT)
      o.message =
          fmt::format("{} is not built here ({} does not exist)", lab_name(decl), lab::quote(path, 200));
    return o;
  }
  interpret(o, c, decl);
  return o;
}

}  // namespace runner
