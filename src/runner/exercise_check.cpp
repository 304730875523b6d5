// Building and judging a learner's file (runner/exercise.h): the build's description, the build and run
// as child processes whose output is kept, the report read back into a verdict, the verdict printed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include <fmt/format.h>

#include "lab/child_process.h"
#include "lab/text.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"

namespace runner {
namespace {

namespace fs = std::filesystem;

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

std::string read_or_empty(const fs::path& p) {
  try {
    return read_text_file(p.string());
  } catch (const ExerciseError&) {
    return "";
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The compiler's messages when the learner's unit failed, else the linker's, else what the build said.
std::string build_messages(const fs::path& work, const fs::path& build_out) {
  for (const char* log : {"compile.log", "link.log"})
    if (std::string text = read_or_empty(work / log); !text.empty()) return text;
  return read_or_empty(build_out);
}

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

// The executable's identity for the reference cache: its modification time and size.
std::string identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}.{:09}:{}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
}

double deadline_for(const LabReference& ref) {
  if (const char* env = std::getenv("AMP_LAB_CHECK_DEADLINE")) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == '\0' && s > 0 && s <= 86400) return s;
    throw ExerciseError(
        fmt::format("AMP_LAB_CHECK_DEADLINE must be seconds in (0, 86400], got {}", lab::quote(env)));
  }
  return std::max(kDeadlineFloor, kDeadlineFactor * ref.seconds);
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
                  .cmake = j.value("cmake", "cmake")};
  for (const auto& [id, u] : j["exercises"].items())
    b.units[id] = {u.value("target", ""), u.value("executable", ""), u.value("work", ""),
                   u.value("lab_target", ""), u.value("lab_executable", "")};
  return b;
}

fs::path workspace_file(const fs::path& dir, const ExerciseInfo& e) {
  return dir / (e.stem + ".cpp");
}

LabRun run_lab_executable(const std::string& executable, const std::string& report_path, bool full,
                          double deadline_s) {
  std::error_code ec;
  fs::remove(report_path, ec);  // a report left from an earlier run is no report of this one
  std::vector<std::string> argv{executable, "--report-file", report_path, "--device", "cpu"};
  if (!full) argv.push_back("--quick");
  constexpr size_t kKept = 64 * 1024;
  LabRun run;
  try {
    lab::Child child({.argv = argv, .out = lab::Stream::capture(kKept), .err = lab::Stream::capture(kKept)});
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
  run.report = read_or_empty(report_path);
  return run;
}

LabReference lab_reference(const std::string& lab_executable, const fs::path& cache, bool full) {
  const std::string id = identity_of(lab_executable);
  const auto kept = nlohmann::json::parse(read_or_empty(cache), nullptr, /*allow_exceptions=*/false);
  LabReference ref;
  if (kept.is_object() && kept.value("executable", "") == lab_executable &&
      kept.value("identity", "") == id && !id.empty() && kept.contains("checks") &&
      kept["checks"].is_array()) {
    for (const auto& k : kept["checks"])
      if (k.is_string()) ref.checks.push_back(k.get<std::string>());
    ref.seconds = kept.value("seconds", 0.0);
    if (!ref.checks.empty()) return ref;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Its own report file: two checks (or tests) may fill the same cache at once; the cache's write is atomic.
  const std::string report_path = cache.string() + ".report." + std::to_string(::getpid());
  const LabRun run = run_lab_executable(lab_executable, report_path, full, /*deadline_s=*/600);
  std::error_code ec;
  fs::remove(report_path, ec);
  ref.seconds = seconds_since(t0);
  const auto report = nlohmann::json::parse(run.report, nullptr, /*allow_exceptions=*/false);
  if (report.is_object() && report.contains("checks") && report["checks"].is_array())
    for (const auto& c : report["checks"])
      if (c.is_object() && c.contains("key") && c["key"].is_string()) ref.checks.push_back(c["key"]);
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

Verdict check_exercise(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& learner_path,
                       bool full, std::ostream& progress) {
  const auto unit = build.units.find(e.id);
  if (unit == build.units.end() || unit->second.lab_executable.empty())
    throw ExerciseError(fmt::format("this build has no exercise {}: reconfigure it (scripts/setup)", e.id));
  const fs::path work = unit->second.work;
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
  int built = 0;
  {
    const FileLock build_lock(fs::path(build.build_dir) / ".amp-lab-build.lock", progress,
                              fmt::format("another build in {} is running: waiting for it", build.build_dir));
    built = run_to_files(
        {build.cmake, "--build", build.build_dir, "--target", unit->second.target, unit->second.lab_target},
        (work / "build.out").string(), (work / "build.err").string());
  }
  v.build_s = seconds_since(t0);
  if (built != 0) {
    v.kind = Verdict::CompileError;
    v.output = build_messages(work, work / "build.out");
    return v;
  }
  const auto t1 = std::chrono::steady_clock::now();
  const LabReference ref = lab_reference(
      unit->second.lab_executable, work / (full ? "reference-full.json" : "reference-quick.json"), full);
  const LabRun run =
      run_lab_executable(unit->second.executable, (work / "report.json").string(), full, deadline_for(ref));
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
