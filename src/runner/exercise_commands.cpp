// amp-lab exercises | exercise ID | check ID | watch ID (runner/exercise_commands.h).
#include "runner/exercise_commands.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "amp/detail/atomic_file.h"
#include "amp_lab_paths.h"
#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"
#include "runner/progress.h"

namespace runner {
namespace {

namespace fs = std::filesystem;

const ExerciseInfo& exercise_arg(const cxxopts::ParseResult& args, const std::string& command) {
  if (args.unmatched().empty())
    throw lab::UsageError(fmt::format("which exercise? (amp-lab {} ID, see: amp-lab exercises)", command));
  if (args.unmatched().size() > 1)
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched()[1]));
  const ExerciseInfo* e = find_exercise(args.unmatched().front());
  if (!e)
    throw lab::UsageError(
        fmt::format("no exercise {} (see: amp-lab exercises)", lab::quote(args.unmatched().front())));
  return *e;
}

cxxopts::ParseResult parse(cxxopts::Options& options, int argc, const char* const* argv) {
  options.allow_unrecognised_options();
  options.add_options()("dir", "the workspace folder (default: " + default_workspace().string() + ")",
                        cxxopts::value<std::string>())("no-color", "plain text")("h,help", "show this help");
  auto args = options.parse(argc, argv);
  for (const auto& a : args.unmatched())
    if (!a.empty() && a[0] == '-') throw lab::UsageError("unknown option " + lab::quote(a));
  return args;
}

// A path as printed: escaped (a name may hold ESC or other control bytes), whole up to 1024 glyphs.
std::string shown(const fs::path& p) {
  return lab::escape(p.string(), 1024);
}

fs::path workspace_of(const cxxopts::ParseResult& args) {
  if (!args.count("dir")) return default_workspace();
  const fs::path dir = args["dir"].as<std::string>();
  if (dir.empty()) throw lab::UsageError("--dir needs a folder, got ''");
  // A symlink to nothing would be "File exists" when the folder is made: said as it is.
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(dir, ec)) && !fs::exists(fs::status(dir, ec)))
    throw lab::UsageError(
        fmt::format("--dir {} is a symlink to nothing ({}): make that folder, or use another", shown(dir),
                    lab::escape(fs::read_symlink(dir, ec).string(), 1024)));
  return dir;
}

// " --dir X" when the command was given --dir, so that a suggested command names the same workspace.
std::string dir_flag(const cxxopts::ParseResult& args) {
  return args.count("dir") ? " --dir " + lab::shell_word(args["dir"].as<std::string>()) : "";
}

// Something other than a file where the learner's file goes (a folder): `exercise` would keep it and
// `check` would send the learner back to `exercise`, so both say what is wrong instead.
void refuse_non_file(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(fs::status(p, ec)))
    throw lab::UsageError(
        fmt::format("{} is {}, not your exercise file: move it away, or use --dir another folder", shown(p),
                    fs::is_directory(st) ? "a directory" : "not a regular file"));
}

// The learner's file: --file, else the workspace's copy of the starter, which must exist.
std::string learner_path(const cxxopts::ParseResult& args, const ExerciseInfo& e) {
  const fs::path p =
      args.count("file") ? fs::path(args["file"].as<std::string>()) : workspace_file(workspace_of(args), e);
  std::error_code ec;
  if (!args.count("file"))
    refuse_non_file(p);
  else if (fs::exists(p, ec) && !fs::is_regular_file(p, ec))  // a FIFO would block watch's reads unsaid
    throw lab::UsageError(fmt::format("--file {} is {}, not a source file", lab::quote(p.string(), 200),
                                      fs::is_directory(p, ec) ? "a directory" : "not a regular file"));
  if (!fs::is_regular_file(p, ec))
    throw lab::UsageError(args.count("file") ? fmt::format("no file {}", lab::quote(p.string(), 200))
                                             : fmt::format("no {} yet: start with amp-lab exercise {}{}",
                                                           shown(p), e.id, dir_flag(args)));
  return p.string();
}

// Records in progress.json what happened to exercise `e`; `change` edits its entry (an object).
void record(const ExerciseInfo& e, const std::function<void(nlohmann::json&)>& change) {
  auto s = default_progress_store();  // shared with the quiz's; none without a home
  if (!s) return;                     // no home: nothing lasts, the command still works
  s->update([&](Progress& p) {
    nlohmann::json& entry = p.exercises[e.id];
    if (!entry.is_object()) entry = nlohmann::json::object();
    change(entry);
    entry["at"] = timestamp();
  });
}

void record_verdict(const ExerciseInfo& e, const Verdict& v) {
  record(e, [&](nlohmann::json& entry) {
    // done: every check of the learner's code holds (and the lab's own runs, which it leaves alone).
    const bool done = v.kind == Verdict::Passed || entry.value("status", "") == "done";
    entry["status"] = done ? "done" : "started";
    entry["checks_run"] = entry.value("checks_run", 0) + 1;
    if (!v.checks.empty())
      entry["last"] = fmt::format("your code: {}/{} checks hold", v.held(), v.judged());
    else
      entry["last"] = v.kind == Verdict::CompileError ? "did not build" : "the lab stopped";
    record_verdict_hints(entry, v);
  });
}

// The exercise's entry in progress.json (null when there is none, or no home to keep one in).
nlohmann::json entry_of(const ExerciseInfo& e) {
  auto s = default_progress_store();
  if (!s) return nullptr;
  const Progress p = s->load();
  return p.exercises.contains(e.id) && p.exercises[e.id].is_object() ? p.exercises[e.id] : nullptr;
}

// Shows the next hint step for the mistake the last check measured, and records it; or says why none.
// Returns whether a step was shown.
bool show_next_hint(const ExerciseInfo& e, const std::string& dir_flag) {
  const nlohmann::json kept = entry_of(e);
  if (kept.is_null() || !kept.contains("last")) {
    std::cout << fmt::format("no check of exercise {} yet: amp-lab check {}{} first\n", e.id, e.id, dir_flag);
    return false;
  }
  const auto step = next_hint_step(e, kept);
  if (!step) {
    const bool any =
        kept.contains("last_hints") && kept["last_hints"].is_array() && !kept["last_hints"].empty();
    std::cout << (any ? fmt::format(
                            "every step of the hints for your last check of exercise {} has been shown; "
                            "amp-lab exercise {} --solution shows the lab's own code\n",
                            e.id, e.id)
                      : fmt::format(
                            "your last check of exercise {} showed no known mistake: read what its failed "
                            "checks measured (the evidence under each)\n",
                            e.id));
    return false;
  }
  std::cout << render_hint_step(e, *step, lab::terminal_width()) << std::flush;
  record(e, [&](nlohmann::json& entry) { record_hint_step(entry, *step); });
  return true;
}

ExerciseBuild the_build() {
  const fs::path json = fs::path(AMP_LAB_BINARY_DIR) / "exercises" / "exercises.json";
  std::error_code ec;
  if (!fs::exists(json, ec))
    throw ExerciseError(
        fmt::format("{} is missing: configure the build first (scripts/setup)", json.string()));
  return load_exercise_build(json);
}

int exit_code_of(const Verdict& v) {
  return v.kind == Verdict::Passed ? lab::kExitPass : lab::kExitCheckFailed;
}

volatile sig_atomic_t g_stop = 0;  // watch: the stop signal that came
void on_stop(int signo) {
  g_stop = signo;
}

Verdict check_once(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& path, bool full,
                   bool color) {
  std::cout << fmt::format("exercise {} ({}) · {}\n", e.id, e.title, shown(path));
  lab::flush_stdout();  // output that cannot be written ends the command, before any build
  const Verdict v = check_exercise(build, e, path, full, std::cout);
  // A build or run that watch's stop signal ended says nothing of the learner's file: neither shown nor
  // recorded as an attempt.
  if (g_stop) return v;
  print_verdict(std::cout, e, v, path, color);
  lab::flush_stdout();
  record_verdict(e, v);
  return v;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool readable(const std::string& path) {
  try {
    read_text_file(path);
    return true;
  } catch (const ExerciseError&) {
    return false;
  }
}

// What tells a save apart: the file's modification time, size and text.
std::string snapshot(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const ExerciseError&) {
  }
  return std::to_string(ec ? 0 : t.time_since_epoch().count()) + ":" + text;
}

// The first character of a line typed on stdin within `ms` milliseconds ('\0' when none). At end of input or
// on an error, `open` becomes false and the wait is a plain sleep from then on.
char key_pressed(bool& open, int ms) {
  if (!open) return poll(nullptr, 0, ms), '\0';
  pollfd in{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
  if (poll(&in, 1, ms) <= 0) return '\0';
  char line[256];
  const ssize_t n = ::read(STDIN_FILENO, line, sizeof line);
  if (n <= 0) {
    open = false;
    return '\0';
  }
  return line[0];
}

}  // namespace

int cmd_exercises(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab exercises", "List the exercises and where you are with each.");
  const auto args = parse(options, argc, argv);
  if (lab::flag(args, "help"))
    return std::cout << lab::help_text(options, lab::terminal_width()), lab::kExitPass;
  if (!args.unmatched().empty())
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  auto s = default_progress_store();  // shared with the quiz's; none without a home
  const Progress progress = s ? s->load() : Progress{};
  std::vector<std::vector<std::string>> rows;
  for (const ExerciseInfo& e : exercises()) {
    std::string status = "-";
    if (progress.exercises.contains(e.id) && progress.exercises[e.id].is_object()) {
      const auto& p = progress.exercises[e.id];
      status = p.value("status", "-");
      if (status != "done" && p.contains("last")) status += ", " + p.value("last", "");
      if (p.value("solution", false)) status += ", solution seen";
    }
    rows.push_back({e.id, e.title, "labs/" + e.stem + "/", status});
  }
  for (const auto& line :
       lab::format_table({"ID", "you write", "lab", "status"}, rows, lab::terminal_width()))
    std::cout << line << "\n";
  std::cout << "start one: amp-lab exercise ID; then amp-lab check ID, or amp-lab watch ID while you edit\n";
  return lab::kExitPass;
}

int cmd_exercise(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab exercise", "Start an exercise: copy its starter into the workspace.");
  options.add_options()("solution", "show the lab's own code for it (recorded in your progress)");
  const auto args = parse(options, argc, argv);
  if (lab::flag(args, "help"))
    return std::cout << lab::help_text(options, lab::terminal_width()), lab::kExitPass;
  const ExerciseInfo& e = exercise_arg(args, "exercise");
  if (lab::flag(args, "solution")) {
    // The lab's own amp.cpp: saved as the learner's file, it passes every check.
    std::cout << read_text_file((labs_folder() / e.stem / "amp.cpp").string());
    record(e, [](nlohmann::json& entry) {
      entry["solution"] = true;
      if (!entry.contains("status")) entry["status"] = "started";
    });
    return lab::kExitPass;
  }
  const fs::path dir = workspace_of(args), file = workspace_file(dir, e);
  refuse_non_file(file);
  std::error_code ec;
  bool existed = fs::exists(fs::symlink_status(file, ec));
  if (!existed) {
    // A workspace that cannot be written is the learner's to fix (another --dir): exit 2 with the cause.
    fs::create_directories(dir, ec);
    if (ec) throw lab::UsageError(fmt::format("cannot make {}: {}", shown(dir), ec.message()));
    const std::string starter = read_text_file((labs_folder() / e.stem / "exercise.cpp").string());
    try {  // whole, and only where nothing is: a file the learner made meanwhile is kept, not replaced
      amp::detail::write_file_atomically(file.string(), starter, {.replace = amp::detail::Replace::No});
    } catch (const amp::detail::AtomicFileError& error) {
      if (error.code().value() != EEXIST)
        throw lab::UsageError(fmt::format("cannot write {}: {}", shown(file), error.code().message()));
      existed = true;
    }
  }
  std::cout << fmt::format("exercise {}: {} (lab {}, in place of labs/{}/amp.cpp)\n", e.id, e.title, e.lab,
                           e.stem)
            << fmt::format("{} {}\n", existed ? "your file, kept as it was:" : "your file:", shown(file))
            << "Fill in its TODO lines; the lab's own checks judge the result.\n"
            << fmt::format("  amp-lab check {}{}    build it and run the checks\n", e.id, dir_flag(args))
            << fmt::format("  amp-lab watch {}{}    the same on every save, until they hold\n", e.id,
                           dir_flag(args))
            << fmt::format("  amp-lab exercise {} --solution    the lab's own code, when you want it\n",
                           e.id);
  record(e, [](nlohmann::json& entry) {
    if (!entry.contains("status")) entry["status"] = "started";
  });
  return lab::kExitPass;
}

int cmd_check(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab check",
                           "Build your file for an exercise and run the lab's checks on it.");
  options.add_options()("file", "check this file, not the workspace's", cxxopts::value<std::string>())(
      "full", "run the lab in its default mode, not --quick");
  const auto args = parse(options, argc, argv);
  if (lab::flag(args, "help"))
    return std::cout << lab::help_text(options, lab::terminal_width()), lab::kExitPass;
  const ExerciseInfo& e = exercise_arg(args, "check");
  const std::string path = learner_path(args, e);
  const ExerciseBuild build = the_build();
  return exit_code_of(
      check_once(build, e, path, lab::flag(args, "full"), lab::want_color(lab::flag(args, "no-color"))));
}

int cmd_hint(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab hint",
                           "The next step of the hint for the mistake your last check showed: the principle, "
                           "then the API to use, then the code.");
  const auto args = parse(options, argc, argv);
  if (lab::flag(args, "help"))
    return std::cout << lab::help_text(options, lab::terminal_width()), lab::kExitPass;
  const ExerciseInfo& e = exercise_arg(args, "hint");
  if (!default_progress_store())
    throw lab::UsageError(
        "amp-lab hint reads your last check from your progress file, and there is no home "
        "folder to keep one in (set HOME or XDG_STATE_HOME)");
  show_next_hint(e, dir_flag(args));
  return lab::kExitPass;
}

int cmd_watch(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab watch", "Check an exercise on every save until the lab's checks hold.");
  options.add_options()("file", "watch this file, not the workspace's", cxxopts::value<std::string>())(
      "full", "run the lab in its default mode, not --quick");
  const auto args = parse(options, argc, argv);
  if (lab::flag(args, "help"))
    return std::cout << lab::help_text(options, lab::terminal_width()), lab::kExitPass;
  const ExerciseInfo& e = exercise_arg(args, "watch");
  const std::string path = learner_path(args, e);
  const ExerciseBuild build = the_build();
  const bool color = lab::want_color(lab::flag(args, "no-color"));
  // No SA_RESTART: Ctrl-C ends the wait at once; a build or run under way gets it too (lab::wait_for passes
  // it on to that child's process group) and stops.
  struct sigaction sa{};
  sa.sa_handler = on_stop;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  bool stdin_open = ::isatty(STDIN_FILENO) == 1;  // a key asks for the next hint step
  for (;;) {
    std::string seen = snapshot(path);
    try {
      const Verdict v = check_once(build, e, path, lab::flag(args, "full"), color);
      if (g_stop) break;
      if (v.kind == Verdict::Passed) return lab::kExitPass;
      std::cout << fmt::format("watching {}: save it to check again{} (Ctrl-C stops)\n", shown(path),
                               stdin_open ? "; h and Enter: the next hint step" : "")
                << std::flush;
    } catch (const ExerciseError& error) {
      // Gone in the middle of a save: checked once it is back. There but unreadable (its permissions, too
      // large): said, and checked again at the next save. Any other error (the build's) ends the watch.
      if (is_file(path)) {
        if (readable(path)) throw;
        std::cout << fmt::format("{}\nwatching {}: save it to check again (Ctrl-C stops)\n",
                                 lab::safe_line(error.what()), shown(path));
        lab::flush_stdout();
      }
      seen = snapshot(path);
    }
    while (!g_stop && snapshot(path) == seen)
      if (key_pressed(stdin_open, 250) == 'h') show_next_hint(e, dir_flag(args));
    // An editor that saves by writing a new file and renaming it over the old one leaves no file for a
    // moment; one that is gone for longer is waited for, said once.
    bool said = false;
    for (int waited = 0; !g_stop && !is_file(path); ++waited) {
      if (waited == 8 && !said) {
        std::cout << fmt::format("{} is gone: waiting for it to be saved again (Ctrl-C stops)\n", shown(path))
                  << std::flush;
        said = true;
      }
      poll(nullptr, 0, 250);
    }
    if (g_stop) break;
    std::cout << "\n";
  }
  std::cout << fmt::format("stopped; your file is {}\n", shown(path));
  return 128 + g_stop;
}

}  // namespace runner
