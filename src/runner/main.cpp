// amp-lab: the quiz runner. It links no LibTorch: each lab is its own executable (build/bin/labNN_<id>, or
// beside an installed amp-lab), which the runner runs with --json and reads back; `amp-lab info` runs
// amp-lab-info, the one small program of the runner that needs LibTorch.
//   amp-lab quiz [--track ID] [--answers abcd...] [--file-order] [--reveal] [--only 1,3] [--device
//   auto|cpu|cuda]
//                [--dtype fp16|bf16] [--seed N] [--quick] [--json FILE] [--no-color] [--quiz FILE]
//   amp-lab run LAB [lab flags]     one lab: its executable, run with these flags
//   amp-lab list                    the tracks, their labs and the questions they back
//   amp-lab info                    LibTorch, CPU 16-bit features, CUDA device
//   amp-lab exercises | exercise ID | check ID | hint ID | watch ID    write a lab's AMP code
//   (runner/exercise_commands.h) amp-lab --version               amp-lab's version and the LibTorch it was
//   built with
// Exit codes: 0 every lab's checks held, 1 a check failed, 2 bad usage or quiz file, 3 a lab failed to run
// or the output could not be written, 128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "amp_lab_version.h"
#include "lab/catalog.h"
#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/catalog_labs.h"
#include "runner/commands.h"
#include "runner/exercise_commands.h"
#include "runner/glossary.h"
#include "runner/interrupt.h"
#include "runner/lab_process.h"
#include "runner/progress.h"
#include "runner/quiz.h"

namespace runner {

Quiz load(const std::string& path) {
  return load_quiz(path, catalog_lab);
}

std::string command_name() {
  const char* name = std::getenv("AMP_LAB_COMMAND");
  return name && *name ? lab::escape(name, 80) : "amp-lab";
}

}  // namespace runner

namespace {

constexpr const char* kUsage =
    "usage: amp-lab <command> [flags]\n"
    "  quiz   take the quiz: each question runs its lab first   (amp-lab quiz --help lists the tracks)\n"
    "  run    run one lab: amp-lab run LAB [--device ..] [--dtype ..] [--seed ..] [--quick] [--flip] "
    "[--json]\n"
    "  list   list the tracks, their labs and the questions they back\n"
    "  progress  what you answered so far, per track (amp-lab quiz --resume goes on, --retry asks again)\n"
    "  glossary  the terms the labs use, each with a definition and a source\n"
    "  info   LibTorch build, the CPU's 16-bit features, the CUDA device\n"
    "  exercises    the exercises: you write a lab's AMP code, its own checks judge it\n"
    "  exercise ID  start one: its starter copied into workspace/ (--solution: the lab's code)\n"
    "  check ID     build your file for exercise ID and run the lab's checks on it\n"
    "  hint ID      the next step of the hint for your last check: the principle, the API, the code\n"
    "  watch ID     check again on every save, until the checks hold\n"
    "  --version  amp-lab's version and the LibTorch it was built with\n";

constexpr const char* kRunUsage =
    "usage: amp-lab run LAB [--device auto|cpu|cuda] [--dtype fp16|bf16] [--seed N] [--quick] [--flip] "
    "[--json]\n"
    "LAB: an id from `amp-lab list` (loss-scaling or loss_scaling), or a question number (2 or 02)\n"
    "--dtype: for the labs that take it (amp-lab list names them); the others refuse it\n";

// Text for standard output; a closed stdout or a full disk is exit 3 with one line, not a silent 0.
int print(const std::string& text) {
  lab::check_stdout_open();
  std::fputs(text.c_str(), stdout);
  lab::flush_stdout();
  return lab::kExitPass;
}

// Replaces this process with `path` (a lab, amp-lab-info): its output, exit code and Ctrl-C are its own.
[[noreturn]] void exec_program(const std::string& path, const std::vector<std::string>& args,
                               const std::string& build_hint) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  if (errno == ENOENT)
    throw lab::OutputError(fmt::format("{} is not built here; {}", lab::quote(path, 200), build_hint));
  throw lab::OutputError(fmt::format("cannot run {}: {}", lab::quote(path, 200), std::strerror(errno)));
}

const lab::LabDecl& lab_named(const std::string& name) {
  if (const lab::LabDecl* decl = lab::find_decl(name)) return *decl;
  if (const lab::LabDecl* near = lab::closest_decl(name))
    throw lab::UsageError(
        fmt::format("no lab named {}; did you mean {}? (see: amp-lab list)", lab::quote(name), near->id));
  throw lab::UsageError(fmt::format("no lab named {} (see: amp-lab list)", lab::quote(name)));
}

int cmd_run(int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help"))
      return print(kRunUsage);
    throw lab::UsageError("which lab? (see: amp-lab list)");
  }
  const lab::LabDecl& decl = lab_named(argv[1]);
  std::vector<std::string> args{runner::lab_path(decl)};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  exec_program(args.front(), args, fmt::format("build it: {} run {}", runner::command_name(), decl.id));
}

int cmd_info(int argc, const char* const* argv) {
  std::vector<std::string> args{runner::lab_folder() + "/amp-lab-info"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  exec_program(args.front(), args, fmt::format("build it: {} info", runner::command_name()));
}

int cmd_list(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab list", "List the tracks, their labs and the questions they back.");
  options.add_options()("quiz", "the quiz file", cxxopts::value<std::string>())("h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (lab::flag(args, "help")) return print(lab::help_text(options, lab::terminal_width()));
  if (!args.unmatched().empty())
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const runner::Quiz quiz =
      runner::load(args.count("quiz") ? args["quiz"].as<std::string>() : runner::default_quiz_path());
  const size_t width = lab::terminal_width();
  for (const auto& track : quiz.tracks) {
    const bool is_default = track.id == quiz.tracks.front().id;
    const std::string command = fmt::format("({}amp-lab quiz{})", is_default ? "default: " : "",
                                            is_default ? "" : " --track " + track.id);
    std::cout << lab::paragraph(fmt::format("track {}:", track.id), track.title + "  " + command, width, 2)
              << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& q : runner::select_track(quiz, track.id).questions)
      rows.push_back({std::to_string(q.number), q.lab, lab::find_decl(q.lab)->executable(), q.prompt});
    // Fitted to the screen: the prompt column narrows and wraps at word boundaries.
    for (const auto& line :
         lab::format_table({"Q", "lab", "executable", "question"}, rows, width > 2 ? width - 2 : width))
      std::cout << "  " << line << "\n";
    std::cout << "\n";
  }
  std::cout << fmt::format("track {}: every question above, in order  (amp-lab quiz --track {})\n",
                           runner::kAllTracks, runner::kAllTracks);
  std::cout << lab::paragraph(
                   "",
                   "amp-lab run LAB runs one lab: LAB is its number (2 or 02), its name or its executable.",
                   width, 0)
            << "\n";
  std::cout << lab::paragraph("",
                              "--dtype fp16|bf16 chooses the 16-bit type of labs " +
                                  lab::labs_taking_dtype() +
                                  "; the others run the types their question is about and refuse it.",
                              width, 0)
            << "\n";
  return lab::kExitPass;
}

int cmd_progress(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab progress", "What you answered so far, per track.");
  options.add_options()("quiz", "the quiz file", cxxopts::value<std::string>())("no-color", "plain text")(
      "h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (lab::flag(args, "help")) return print(lab::help_text(options, lab::terminal_width()));
  if (!args.unmatched().empty())
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const runner::Quiz quiz =
      runner::load(args.count("quiz") ? args["quiz"].as<std::string>() : runner::default_quiz_path());
  std::string why;
  const auto dir = runner::default_state_dir(&why);
  if (!dir) throw lab::UsageError("no saved progress: " + why);
  runner::ProgressStore store(*dir);
  runner::print_progress(std::cout, store.load(), quiz, store.file(), lab::terminal_width(),
                         lab::want_color(lab::flag(args, "no-color")), runner::command_name());
  return lab::kExitPass;
}

int cmd_glossary(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab glossary", "The terms the labs use.");
  options.add_options()("no-color", "plain text")("h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (lab::flag(args, "help")) return print(lab::help_text(options, lab::terminal_width()));
  if (!args.unmatched().empty())
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  runner::print_glossary(std::cout, runner::load_glossary(runner::glossary_path()), lab::terminal_width(),
                         lab::want_color(lab::flag(args, "no-color")));
  return lab::kExitPass;
}

int dispatch(const std::string& command, int argc, const char* const* argv) {
  if (command == "quiz") return runner::cmd_quiz(argc, argv);
  if (command == "run") return cmd_run(argc, argv);
  if (command == "list") return cmd_list(argc, argv);
  if (command == "info") return cmd_info(argc, argv);
  if (command == "progress") return cmd_progress(argc, argv);
  if (command == "glossary") return cmd_glossary(argc, argv);
  if (command == "plan") return runner::cmd_plan(argc, argv);
  if (command == "exercises") return runner::cmd_exercises(argc, argv);
  if (command == "exercise") return runner::cmd_exercise(argc, argv);
  if (command == "check") return runner::cmd_check(argc, argv);
  if (command == "hint") return runner::cmd_hint(argc, argv);
  if (command == "watch") return runner::cmd_watch(argc, argv);
  throw lab::UsageError(
      "unknown command " + lab::quote(command) +
      " (commands: quiz, run, list, progress, glossary, info, exercises, exercise, check, hint, watch)");
}

// Runs the command; every error is one line on stderr and an exit code.
int run_command(const std::string& command, int argc, const char* const* argv) {
  const bool known = command == "quiz" || command == "run" || command == "list" || command == "info" ||
                     command == "progress" || command == "glossary" || command == "exercises" ||
                     command == "exercise" || command == "check" || command == "watch";
  const std::string name = known ? "amp-lab " + command : "amp-lab";  // names the command in messages
  try {
    lab::check_stdout_open();
    lab::check_argv(argc + 1, argv - 1);  // before cxxopts sees anything
    const int code = dispatch(command, argc, argv);
    lab::flush_stdout();
    return code;
  } catch (const runner::QuizError& e) {
    std::fprintf(stderr, "amp-lab: %s\n", lab::safe_line(e.what()).c_str());
    return lab::kExitUsage;
  } catch (const lab::UsageError& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::safe_line(e.what()).c_str());
    return lab::kExitUsage;
  } catch (const cxxopts::exceptions::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::safe_line(e.what()).c_str());
    return lab::kExitUsage;
  } catch (const std::exception& e) {  // lab::OutputError and anything else: exit 3
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::safe_line(e.what()).c_str());
    return lab::kExitLabError;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // First, so that a signal while the quiz loads still ends with the summary and 128+signo.
  if (argc >= 2 && std::string_view(argv[1]) == "quiz") runner::install_interrupt_handler();
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return lab::kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help" || command == "--version") {
    try {
      return print(command == "--version"
                       ? fmt::format("amp-lab {}, built with LibTorch {} ({} build)\n", AMP_LAB_VERSION,
                                     AMP_LAB_TORCH_VERSION, AMP_LAB_TORCH_CUDA ? "CUDA" : "CPU-only")
                       : std::string(kUsage));
    } catch (const lab::OutputError& e) {
      std::fprintf(stderr, "amp-lab: %s\n", e.what());
      return lab::kExitLabError;
    }
  }
  return run_command(command, argc - 1, argv + 1);
}
