// Building and judging a learner's file (runner/exercise.h): the build's description, the build and run
// as child processes whose output is kept, the report read back into a verdict, the verdict printed.
#include <chrono>
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
    b.units[id] = {u.value("target", ""), u.value("executable", ""), u.value("work", "")};
  return b;
}

fs::path workspace_file(const fs::path& dir, const ExerciseInfo& e) {
  return dir / (e.stem + ".cpp");
}

Verdict check_exercise(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& learner_path,
                       bool full) {
  const auto unit = build.units.find(e.id);
  if (unit == build.units.end())
    throw ExerciseError(fmt::format("this build has no exercise {}: reconfigure it (scripts/setup)", e.id));
  const fs::path work = unit->second.work;
  const std::string text = read_text_file(learner_path);
  write_if_changed((work / "learner.cpp").string(), learner_unit(fs::absolute(learner_path).string(), text));
  std::error_code ec;
  for (const char* log : {"compile.log", "link.log"})
    fs::remove(work / log, ec);  // only this build's messages

  Verdict v;
  const auto t0 = std::chrono::steady_clock::now();
  const int built = run_to_files({build.cmake, "--build", build.build_dir, "--target", unit->second.target},
                                 (work / "build.out").string(), (work / "build.err").string());
  v.build_s = seconds_since(t0);
  if (built != 0) {
    v.kind = Verdict::CompileError;
    v.output = build_messages(work, work / "build.out");
    return v;
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<std::string> argv{unit->second.executable, "--json", "--device", "cpu"};
  if (!full) argv.push_back("--quick");
  const int code = run_to_files(argv, (work / "run.json").string(), (work / "run.err").string());
  const double build_s = v.build_s;
  v = verdict_from_run(e, read_or_empty(work / "run.json"), code, read_or_empty(work / "run.err"));
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
  if (v.kind == Verdict::LabError) {
    out << "  the lab stopped: " << lab::safe_line(v.output) << "\n";
  }
  // Laid out to the terminal's width, as the labs' reports are; the colour codes go on after wrapping.
  const size_t width = lab::terminal_width();
  auto put = [&](const std::string& text, const std::string& first, const std::string& rest) {
    for (const auto& line : lab::wrap_lines(text, width, first, rest)) out << line << "\n";
  };
  for (const CheckOutcome& c : v.checks) {
    const auto lines = lab::wrap_lines(c.key + ": " + c.claim, width, "  PASS  ", "        ");
    for (size_t i = 0; i < lines.size(); ++i)
      out << (i == 0 ? "  " + (c.passed ? style.green("PASS") : style.red("FAIL")) + lines[i].substr(6)
                     : lines[i])
          << "\n";
    put(c.evidence, "        ", "        ");
  }
  for (const ExerciseHint* h : v.hints) put(h->text, "  hint: ", "        ");
  const std::string timing = fmt::format("built in {:.1f} s, checked in {:.1f} s", v.build_s, v.run_s);
  if (v.kind == Verdict::Passed) {
    out << style.bold(fmt::format("exercise {} done: all {} checks hold ({})", e.id, v.checks.size(), timing))
        << "\n";
  } else if (v.kind == Verdict::LabError) {
    out << style.bold(fmt::format("not yet: the lab could not finish with your code ({})", timing)) << "\n";
  } else {
    out << style.bold(fmt::format("not yet: {} of {} checks fail ({})", v.checks.size() - v.held(),
                                  v.checks.size(), timing))
        << "\n";
  }
}

}  // namespace runner
