// Building and judging a learner's file (runner/exercise.h): the build's description, the build and run
// as child processes whose output is kept, the report read back into a verdict, the verdict printed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>

#include <fmt/format.h>

#include "lab/child_process.h"
#include "lab/cli_args.h"
#include "lab/regular_file.h"
#include "lab/text.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"

namespace runner {
namespace {

namespace fs = std::filesystem;

constexpr int kReportFdInChild = 3;  // the report's descriptor, as the lab gets it

// Runs argv with stdout and stderr written to the given files and stdin from /dev/null (so a child never
// waits for the terminal), in a process group of its own (lab/child_process.h): a Ctrl-C, SIGTERM or SIGHUP
// that reaches the runner meanwhile goes on to it (and to the watch's handler), and a runner without a
// handler of its own then ends by that signal, as it would have. Returns its exit code, 128+N when signal N
// ended it, 127 when it did not start.
int run_to_files(const std::vector<std::string>& argv, const std::string& out_path,
                 const std::string& err_path) {
  try {
    lab::Child child({.argv = argv, .out = lab::Stream::file(out_path), .err = lab::Stream::file(err_path)});
    lab::wait_for(child);
    return child.status().code();
  } catch (const lab::SpawnError& e) {
    throw ExerciseError(e.what());
  }
}

// A file the build or the lab left in the work folder, which the learner's code can reach: a regular file
// only, no symlink followed, at most `max_bytes` (cut there, said in a last line); "" when there is none.
std::string read_or_empty(const fs::path& p, size_t max_bytes = 64 * 1024) {
  try {
    bool cut = false;
    std::string text =
        lab::read_regular_file(p.string(), {.max_bytes = max_bytes, .follow = false, .cut = true}, &cut);
    if (cut) text += fmt::format("\n[... cut at {} KiB]\n", max_bytes / 1024);
    return text;
  } catch (const lab::ReadError&) {
    return "";
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The lines of the regular file at `p` (no symlink followed, a FIFO or device never opened), counted as
// it is read in blocks: a 44 MB log costs no more memory than one block. 0 when it cannot be read.
size_t count_lines(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st{};
  size_t lines = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char block[65536];
    for (ssize_t n; (n = ::read(fd, block, sizeof block)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      lines += static_cast<size_t>(std::count(block, block + n, '\n'));
    }
  }
  ::close(fd);
  return lines;
}

}  // namespace

std::string build_messages(const fs::path& work, const fs::path& build_out) {
  constexpr size_t kRead = 256 * 1024;
  for (const fs::path& log : {work / "compile.log", work / "link.log", build_out}) {
    std::string text = read_or_empty(log, kRead);
    if (text.empty()) continue;
    size_t from = 0;  // after the lines shown
    for (size_t n = 0; n < kBuildLinesShown && from < text.size(); ++n) {
      const size_t end = text.find('\n', from);
      from = end == std::string::npos ? text.size() : end + 1;
    }
    if (from >= text.size()) return text;  // all of it fits
    const size_t shown = kBuildLinesShown, total = std::max(count_lines(log), shown);
    return text.substr(0, from) + fmt::format("[... {} more lines cut; the whole log: {}]\n", total - shown,
                                              lab::escape(log.string(), 1024));
  }
  return "";
}

namespace {

// An exclusive flock(2) on `path` for this object's life (the lock scripts/amp-lab's builds take with
// flock(1) on the build folder's lock file). When another holder has it, `progress` gets `waiting` and the
// call waits for it.
class FileLock {
 public:
  FileLock(const fs::path& path, std::ostream& progress, const std::string& waiting) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw ExerciseError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    progress << waiting << "\n" << std::flush;
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR)
        throw ExerciseError(fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno)));
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// The one command Ninja runs to make `output`, a file of the build (`ninja -t commands -s`: the command
// alone, not those of its inputs); "" when Ninja gives none or more than one line.
std::string ninja_command(const ExerciseBuild& build, const std::string& output) {
  const std::string rel = fs::path(output).lexically_normal().lexically_relative(build.build_dir).string();
  if (build.make_program.empty() || rel.empty() || rel.rfind("..", 0) == 0) return "";
  try {
    lab::Child child({.argv = {build.make_program, "-C", build.build_dir, "-t", "commands", "-s", rel},
                      .out = lab::Stream::capture(256 * 1024),
                      .err = lab::Stream::capture(4096)});
    lab::wait_for(child);
    std::string command = child.out();
    while (!command.empty() && command.back() == '\n') command.pop_back();
    if (child.status().code() != 0 || command.empty() || command.find('\n') != std::string::npos) return "";
    return command;
  } catch (const lab::SpawnError&) {
    return "";
  }
}

// Runs a command of the build's own (a Ninja command line) with the shell, in the build folder, as Ninja
// would, its output written to the given files (run_to_files).
int run_build_command(const ExerciseBuild& build, const std::string& command, const std::string& out_path,
                      const std::string& err_path) {
  return run_to_files({"/bin/sh", "-c", "cd -- \"$0\" && exec /bin/sh -c \"$1\"", build.build_dir, command},
                      out_path, err_path);
}

// The executable's identity for the reference cache: its modification time and size.
std::string identity_of(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}.{:09}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

double deadline_for(const LabReference& ref) {
  if (const std::optional<double> s = check_deadline_override()) return *s;
  return std::max(kDeadlineFloor, kDeadlineFactor * ref.seconds);
}

// What is of the wrong type in a report the judge reads ("" when nothing is): each check an object with a
// string key, claim and evidence and a boolean passed, the report's passed a boolean, its observations an
// object. The lab writes exactly that; anything else came from elsewhere.
std::string report_shape_error(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("checks")) return "";  // no report at all: the verdict says so
  if (!r["checks"].is_array()) return "its checks are not a list";
  if (!r.contains("passed") || !r["passed"].is_boolean()) return "its passed is not true or false";
  if (r.contains("observations") && !r["observations"].is_object())
    return "its observations are not an object";
  for (size_t i = 0; i < r["checks"].size(); ++i) {
    const auto& c = r["checks"][i];
    if (!c.is_object()) return fmt::format("check {} is not an object", i + 1);
    for (const char* text : {"key", "claim", "evidence"})
      if (!c.contains(text) || !c[text].is_string())
        return fmt::format("check {}'s {} is not text", i + 1, text);
    if (!c.contains("passed") || !c["passed"].is_boolean())
      return fmt::format("check {}'s passed is not true or false", i + 1);
  }
  return "";
}

// The lab's report, from the descriptor the judge handed it (at most 4 MiB); "" with a line in `err` when
// it is not one: too large, or of the wrong shape.
std::string read_report(int fd, std::string& err) {
  constexpr size_t kMaxReport = 4 << 20;
  std::string why;
  try {
    std::string text = lab::read_regular_fd(fd, "the lab's report", {.max_bytes = kMaxReport});
    why = report_shape_error(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false));
    if (why.empty()) return text;
    why = "the lab's report is not one the lab writes: " + why;
  } catch (const lab::ReadError& e) {
    why = e.what();
  }
  err += fmt::format("{}amp-lab: {}\n", err.empty() || err.back() == '\n' ? "" : "\n", why);
  return "";
}

// The reference a cache file holds, when it is one the judge wrote for this executable: every field of its
// type, the keys distinct strings, the time finite and at most kMaxReferenceSeconds. Anything else (a file
// the learner's code rewrote, a FIFO, a giant) is no cache: the lab is run again.
constexpr double kMaxReferenceSeconds = 3600;
std::optional<LabReference> cached_reference(const fs::path& cache, const std::string& lab_executable,
                                             const std::string& id) {
  const auto kept = nlohmann::json::parse(read_or_empty(cache), nullptr, /*allow_exceptions=*/false);
  if (id.empty() || !kept.is_object() || !kept.contains("executable") ||
      kept["executable"] != lab_executable || !kept.contains("identity") || kept["identity"] != id ||
      !kept.contains("checks") || !kept["checks"].is_array() || kept["checks"].empty() ||
      !kept.contains("seconds") || !kept["seconds"].is_number())
    return std::nullopt;
  LabReference ref{.seconds = kept["seconds"].get<double>(), .from_cache = true};
  if (!(ref.seconds > 0 && ref.seconds <= kMaxReferenceSeconds)) return std::nullopt;
  for (const auto& k : kept["checks"]) {
    if (!k.is_string()) return std::nullopt;
    ref.checks.push_back(k.get<std::string>());
  }
  std::vector<std::string> sorted = ref.checks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return ref;
}

// The check keys of a report, in its order; empty when it holds none.
std::vector<std::string> report_keys(const std::string& report_text) {
  std::vector<std::string> keys;
  const auto report = nlohmann::json::parse(report_text, nullptr, /*allow_exceptions=*/false);
  if (report.is_object() && report.contains("checks") && report["checks"].is_array())
    for (const auto& c : report["checks"])
      if (c.is_object() && c.contains("key") && c["key"].is_string()) keys.push_back(c["key"]);
  return keys;
}

// Every process the run left, in whatever group or session, is killed and reaped (lab/child_process.h).
void end_what_it_left() {
  lab::end_descendants();
}

// What the learner's program printed itself, apart from the verdict and under a heading: at most
// kShownLines lines, each made safe for the terminal and cut to the width of a line.
void print_printed(std::ostream& out, const std::string& printed, const lab::Style& style) {
  constexpr size_t kShownLines = 20;
  if (printed.find_first_not_of(" \t\r\n") == std::string::npos) return;
  std::vector<std::string> lines;
  for (size_t b = 0; b < printed.size();) {
    const size_t end = std::min(printed.find('\n', b), printed.size());
    lines.push_back(printed.substr(b, end - b));
    b = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  out << style.bold(
             fmt::format("your program printed ({} line{}):", lines.size(), lines.size() == 1 ? "" : "s"))
      << "\n";
  for (size_t i = 0; i < lines.size() && i < kShownLines; ++i)
    out << "  | " << lab::safe_line(lines[i], 200) << "\n";
  if (lines.size() > kShownLines) out << fmt::format("  | ... {} more lines\n", lines.size() - kShownLines);
}

}  // namespace

ExerciseBuild load_exercise_build(const fs::path& json_path) {
  const std::string text = read_text_file(json_path.string());
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("exercises") || !j["exercises"].is_object())
    throw ExerciseError(
        fmt::format("{} is not the exercises' description the build writes", json_path.string()));
  ExerciseBuild b{.source_dir = j.value("source_dir", ""),
                  .build_dir = j.value("build_dir", ""),
                  .cmake = j.value("cmake", "cmake"),
                  .generator = j.value("generator", ""),
                  .make_program = j.value("make_program", "")};
  for (const auto& [id, u] : j["exercises"].items())
    b.units[id] = {u.value("target", ""),     u.value("executable", ""),     u.value("work", ""),
                   u.value("lab_target", ""), u.value("lab_executable", ""), u.value("inputs_target", ""),
                   u.value("object", "")};
  return b;
}

fs::path workspace_file(const fs::path& dir, const ExerciseInfo& e) {
  return dir / (e.stem + ".cpp");
}

std::optional<double> check_deadline_override() {
  const char* env = std::getenv("AMP_LAB_CHECK_DEADLINE");
  if (!env) return std::nullopt;
  // Plain decimal seconds, nothing around them: strtod would take " 5", "1e-9", "inf" and "0x10" too.
  const std::string v = env;
  const bool plain = !v.empty() && v.find_first_not_of("0123456789.") == std::string::npos &&
                     std::count(v.begin(), v.end(), '.') <= 1 && v != ".";
  const double s = plain ? std::strtod(v.c_str(), nullptr) : 0;
  if (!plain || !(s >= kMinCheckDeadline && s <= 86400))
    throw lab::UsageError(fmt::format("AMP_LAB_CHECK_DEADLINE must be seconds from {:g} to 86400, got {}",
                                      kMinCheckDeadline, lab::quote(v)));
  return s;
}

LabRun run_lab_executable(const std::string& executable, bool full, double deadline_s) {
  std::vector<std::string> argv{executable, "--device", "cpu"};
  if (!full) argv.push_back("--quick");
  constexpr size_t kKept = 64 * 1024;
  LabRun run;
  // The report's channel: a file of the judge's own with no name (memfd), handed to the lab as a descriptor
  // (AMP_LAB_REPORT_FD, lab/cli_args.h), never a path on its command line that its code could find and fill
  // in.
  const int report_fd = ::memfd_create("amp-lab-report", MFD_CLOEXEC);
  if (report_fd < 0)
    throw ExerciseError(fmt::format("cannot make the report's file: {}", std::strerror(errno)));
  struct Closing {
    int fd;
    ~Closing() { ::close(fd); }
  } closing{report_fd};
  // Whatever the program starts, in whatever group or session, is handed to this process when its parent
  // ends, and killed once the run is over (end_what_it_left).
  lab::become_subreaper();
  try {
    lab::Child child({.argv = argv,
                      .env = {fmt::format("{}={}", lab::kReportFdVar, kReportFdInChild)},
                      .out = lab::Stream::capture(kKept),
                      .err = lab::Stream::capture(kKept),
                      .pass_fds = {{report_fd, kReportFdInChild}}});
    lab::WaitOptions wait;
    if (deadline_s > 0) wait.deadline = std::chrono::milliseconds(static_cast<long long>(deadline_s * 1000));
    const lab::WaitEnd end = lab::wait_for(child, wait);
    run.out = child.out();
    run.err = child.err();
    run.exit_code = child.status().code();
    if (end == lab::WaitEnd::TimedOut) run.deadline_s = deadline_s;
  } catch (const lab::SpawnError& e) {
    throw ExerciseError(e.what());
  }
  end_what_it_left();
  run.report = read_report(report_fd, run.err);
  return run;
}

LabReference lab_reference(const std::string& lab_executable, const fs::path& cache, bool full) {
  const std::string id = identity_of(lab_executable);
  if (std::optional<LabReference> kept = cached_reference(cache, lab_executable, id)) return *kept;
  LabReference ref;
  const auto t0 = std::chrono::steady_clock::now();
  // Two checks (or tests) may fill the same cache at once; the cache's write is atomic.
  const LabRun run = run_lab_executable(lab_executable, full, /*deadline_s=*/600);
  ref.seconds = seconds_since(t0);
  ref.checks = report_keys(run.report);
  if (ref.checks.empty())
    throw ExerciseError(fmt::format("the lab's own {} gave no report ({}): rebuild it (scripts/setup)",
                                    lab_executable,
                                    lab::safe_line(run.err.empty() ? "no message" : run.err)));
  write_if_changed(
      cache.string(),
      nlohmann::json{
          {"executable", lab_executable}, {"identity", id}, {"checks", ref.checks}, {"seconds", ref.seconds}}
              .dump(2) +
          "\n");
  return ref;
}

namespace {

// Builds the learner's unit and executable; the build's exit code (0: built), its output in work/build.out
// and work/build.err.
int build_learner(const ExerciseBuild& build, const ExerciseBuild::Unit& u, const fs::path& work,
                  std::ostream& progress) {
  int built = 0;
  std::error_code made;
  const std::string out = (work / "build.out").string(), err = (work / "build.err").string();
  // With Ninja, the build folder's lock is held only while what the learner's unit builds on is brought up
  // to date (nothing to do, as a rule: 0.1 s); the unit's own compile and link, Ninja's two commands for
  // them run as Ninja would run them, come after, so that checks of other exercises build meanwhile. This
  // exercise's lock, held throughout, keeps its object and executable to this check.
  const bool ninja = build.generator == "Ninja" && !u.inputs_target.empty() && !u.object.empty();
  std::string compile, link;
  bool direct = false;  // the learner's unit compiled and linked by Ninja's commands, out of the lock
  {
    const FileLock build_lock(fs::path(build.build_dir) / ".amp-lab-build.lock", progress,
                              fmt::format("another build in {} is running: waiting for it", build.build_dir));
    if (ninja) {
      built = run_to_files(
          {build.cmake, "--build", build.build_dir, "--target", u.inputs_target, u.lab_target}, out, err);
      if (built == 0) compile = ninja_command(build, u.object), link = ninja_command(build, u.executable);
      direct = built != 0 || (!compile.empty() && !link.empty());
    }
    if (!direct)
      built = run_to_files({build.cmake, "--build", build.build_dir, "--target", u.target, u.lab_target}, out,
                           err);
  }
  if (direct && built == 0) {
    for (const std::string& file : {u.object, u.executable})
      fs::create_directories(fs::path(file).parent_path(), made);  // as Ninja makes an output's folder
    built = run_build_command(build, compile, out, err);
    if (built == 0) built = run_build_command(build, link, out, err);
  }
  return built;
}

}  // namespace

Verdict check_exercise(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& learner_path,
                       bool full, std::ostream& progress) {
  const auto unit = build.units.find(e.id);
  if (unit == build.units.end() || unit->second.lab_executable.empty())
    throw ExerciseError(fmt::format("this build has no exercise {}: reconfigure it (scripts/setup)", e.id));
  const fs::path work = unit->second.work;
  check_deadline_override();  // a bad value is said before the build, not after it
  // A work folder the learner's code removed is made again: it holds only what the build and the judge put.
  std::error_code made;
  fs::create_directories(work, made);
  // One check of this exercise at a time: two would write the same learner.cpp and relink the executable
  // the other runs.
  const FileLock one_check(work / ".check.lock", progress,
                           fmt::format("another check of exercise {} is running: waiting for it", e.id));
  const std::string text = read_text_file(learner_path);
  write_if_changed((work / "learner.cpp").string(), learner_unit(fs::absolute(learner_path).string(), text));
  std::error_code ec;
  for (const char* log : {"compile.log", "link.log"})
    fs::remove(work / log, ec);  // only this build's messages

  Verdict v;
  const auto t0 = std::chrono::steady_clock::now();
  const int built = build_learner(build, unit->second, work, progress);
  v.build_s = seconds_since(t0);
  if (built != 0) {
    v.kind = Verdict::CompileError;
    v.output = build_messages(work, work / "build.out");
    return v;
  }
  const auto t1 = std::chrono::steady_clock::now();
  const fs::path cache = work / (full ? "reference-full.json" : "reference-quick.json");
  LabReference ref = lab_reference(unit->second.lab_executable, cache, full);
  const LabRun run = run_lab_executable(unit->second.executable, full, deadline_for(ref));
  if (ref.from_cache && run.deadline_s == 0) {
    // The cache sits in a folder the learner's code can write: when the report's keys are not the cached
    // ones, the lab's own executable says again which they are, and that is what the report is held to.
    std::vector<std::string> got = report_keys(run.report), want = ref.checks;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    if (!got.empty() && got != want) {
      fs::remove(cache, made);
      ref = lab_reference(unit->second.lab_executable, cache, full);
    }
  }
  const double build_s = v.build_s;
  v = verdict_from_run(e, run, ref.checks);
  v.build_s = build_s;
  v.run_s = seconds_since(t1);
  return v;
}

void print_verdict(std::ostream& out, const ExerciseInfo& e, const Verdict& v,
                   const std::string& learner_path, bool color) {
  const lab::Style style{color};
  if (v.kind == Verdict::CompileError) {
    out << v.output;
    if (!v.output.empty() && v.output.back() != '\n') out << "\n";
    out << style.bold(fmt::format("does not build: {} (the compiler's messages above, {:.1f} s)",
                                  lab::escape(learner_path, 1024), v.build_s))
        << "\n";
    return;
  }
  print_printed(out, v.printed, style);
  if (v.kind == Verdict::LabError) {
    out << "  the lab stopped: " << lab::safe_line(v.output) << "\n";
  }
  print_checks(out, e, v, color);
  out << style.bold(verdict_line(e, v)) << "\n";
}

}  // namespace runner
