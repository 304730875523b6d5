#include "runner/lab_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lab/child_process.h"
#include "lab/text.h"
#include "runner/interrupt.h"

namespace runner {
namespace {

constexpr std::chrono::milliseconds kGrace{
    3000};                                    // after the stop signal, a lab has this long before SIGKILL
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

void interpret(LabOutcome& o, const lab::Child& child, const lab::LabDecl& decl) {
  const lab::ChildStatus& c = child.status();
  o.exit_code = c.code();
  if (c.stop_signal) {
    o.kind = LabOutcome::Kind::Interrupted;
    o.message = fmt::format("{} was stopped ({})", lab_name(decl), interrupt_reason());
  } else if (c.term_signal) {
    o.kind = LabOutcome::Kind::Crashed;
    o.message = fmt::format("{} crashed: killed by signal {} ({})", lab_name(decl), c.term_signal,
                            strsignal(c.term_signal));
  } else if (o.exit_code == 0 || o.exit_code == 1) {
    read_report(o, child.out());
    o.notices = notices_of(child.err());
  } else {
    o.kind = o.exit_code == 2 ? LabOutcome::Kind::Usage : LabOutcome::Kind::Failed;
    const std::string said = last_line(child.err(), decl);
    o.message = said.empty() ? fmt::format("it exited with code {} and said nothing", o.exit_code) : said;
  }
}

// The signal the lab's group gets now: the first one the runner had, once the walk is told to stop the
// lab now (runner/interrupt.h); 0 until then.
int stop_signal() {
  if (!stop_lab_now()) return 0;
  return interrupt_signal() ? interrupt_signal() : SIGTERM;
}

// A suite runs the same lab with the same flags many times (each walk, each screen size, each question
// alone). With $AMP_LAB_REPORT_CACHE naming a folder, a report the lab printed (exit 0 or 1) is kept there,
// keyed by the executable (its path, size and modification time) and its arguments, and a later run with
// the same key reads it instead of running the lab again. For the tests of what the walk shows (TESTING.md);
// a learner's walk never sets it. "" when not set or the executable is not there.
std::string cached_report_path(const std::vector<std::string>& args) {
  const char* dir = std::getenv("AMP_LAB_REPORT_CACHE");
  struct stat st {};
  if (!dir || !*dir || ::stat(args.front().c_str(), &st) != 0) return "";
  std::string key = fmt::format("{}:{}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  for (const auto& a : args) key += '\n' + a;
  return fmt::format("{}/{:016x}.json", dir, std::hash<std::string>{}(key));
}

std::optional<LabOutcome> read_cached(const std::string& path) {
  std::ifstream in(path);
  if (path.empty() || !in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    LabOutcome o;
    read_report(o, j.at("out").get<std::string>());
    o.exit_code = j.at("exit_code").get<int>();
    o.notices = j.at("notices").get<std::vector<std::string>>();
    o.seconds = j.at("seconds").get<double>();
    if (o.kind == LabOutcome::Kind::Report) return o;
  } catch (const std::exception&) {
  }
  return std::nullopt;  // unreadable: run the lab and write it again
}

// Written whole under a name of its own, then renamed: tests running at once may write the same key.
void write_cached(const std::string& path, const LabOutcome& o, const std::string& out) {
  if (path.empty() || o.kind != LabOutcome::Kind::Report) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  {
    std::ofstream f(tmp);
    f << nlohmann::json{
        {"out", out}, {"exit_code", o.exit_code}, {"notices", o.notices}, {"seconds", o.seconds}};
    if (!f) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

LabOutcome run_lab_process(const lab::LabDecl& decl, const std::vector<std::string>& flags, std::ostream& out,
                           bool live) {
  const double start = now_s();
  LabOutcome o;
  const std::string path = lab_path(decl);
  std::vector<std::string> args{path, "--json"};
  // The walk's --dtype goes to the labs that take one; the others refuse it (their types are fixed).
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] == "--dtype" && !decl.takes_dtype()) {
      ++i;  // and its value
      continue;
    }
    args.push_back(flags[i]);
  }
  const std::string cache = cached_report_path(args);
  if (auto cached = read_cached(cache)) return *cached;
  LiveLine line(out, live, "running " + lab_name(decl));
  // Its own process group (lab/child_process.h), so the terminal's Ctrl-C reaches the runner alone and the
  // runner decides when the lab stops; should the runner die without stopping it, the lab gets SIGTERM.
  lab::Child child({.argv = args,
                    .out = lab::Stream::capture(kMaxReportBytes),
                    .err = lab::Stream::capture(kMaxStderrBytes, /*keep_tail=*/true),
                    .death_signal = SIGTERM});
  set_lab_running(child.pid());
  // The walk's handler (interrupt.h) decides when the lab stops, through stop_signal; without one, a signal
  // goes on to the lab, and the runner then ends by it.
  lab::wait_for(child, {.forward = lab::Forward::Unhandled,
                        .stop = stop_signal,
                        .grace = kGrace,
                        .tick =
                            [&] {
                              line.tick();
                              return true;
                            },
                        .interval = std::chrono::milliseconds(100)});
  set_lab_running(0);
  line.clear();
  o.seconds = now_s() - start;
  if (const int e = child.status().exec_errno) {
    o.kind = e == ENOENT ? LabOutcome::Kind::NotBuilt : LabOutcome::Kind::Failed;
    o.message = fmt::format("cannot run {}: {}", lab::quote(path, 200), std::strerror(e));
    if (e == ENOENT)
      o.message =
          fmt::format("{} is not built here ({} does not exist)", lab_name(decl), lab::quote(path, 200));
    return o;
  }
  interpret(o, child, decl);
  write_cached(cache, o, child.out());
  return o;
}

}  // namespace runner
