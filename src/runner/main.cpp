// amp-lab: the quiz runner. `amp-lab quiz` walks the eight core questions, running each question's lab first;
// `--track recipes` walks the AMP-examples questions, `--track all` every question.
//   amp-lab quiz [--track core|recipes|all] [--answers abcd...] [--reveal] [--only 1,3] [--device auto|cpu|cuda]
//                [--dtype fp16|bf16] [--seed N] [--quick] [--json FILE] [--no-color] [--quiz FILE]
//   amp-lab run LAB [lab flags]     one lab, as its own executable would run it
//   amp-lab list                    the tracks, their labs and the questions they back
//   amp-lab info                    LibTorch, CPU 16-bit features, CUDA device
//   amp-lab exercises | exercise ID | check ID | watch ID    write a lab's AMP code (runner/exercise_commands.h)
//   amp-lab progress                your quiz answers and exercises so far
//   amp-lab --version               amp-lab's version and the LibTorch it was built with
// Exit codes: 0 every lab's checks held, 1 a check failed, 2 bad usage or quiz file, 3 a lab failed to run
// or the output could not be written, 128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include <unistd.h>

#include <cxxopts.hpp>
#include <fmt/format.h>

#include "amp_lab_paths.h"
#include "amp_lab_version.h"
#include "lab/cli.h"
#include "lab/registry.h"
#include "lab/text.h"
#include "runner/exercise_commands.h"
#include "runner/exercise_source.h"
#include "runner/info.h"
#include "runner/progress.h"
#include "runner/quiz.h"
#include "runner/walk.h"

namespace {

constexpr const char* kUsage =
    "usage: amp-lab <command> [flags]\n"
    "  quiz   take the quiz: each question runs its lab first   (amp-lab quiz --help)\n"
    "  run    run one lab: amp-lab run LAB [--device ..] [--dtype ..] [--seed ..] [--quick] [--json]\n"
    "  list   list the tracks, their labs and the questions they back\n"
    "  info   LibTorch build, the CPU's 16-bit features, the CUDA device\n"
    "  exercises      list the exercises: you write a lab's AMP code, its checks judge it\n"
    "  exercise ID    start one: copies its starter into workspace/ (--solution: the lab's code)\n"
    "  check ID       build your file for exercise ID and run the lab's checks on it\n"
    "  watch ID       check again on every save, until the checks hold\n"
    "  progress       your quiz answers and exercises so far\n"
    "  --version  amp-lab's version and the LibTorch it was built with\n";

// $AMP_LAB_QUIZ; else the installed quiz beside an installed runner (P/bin/amp-lab reads
// P/share/amp-lab/quiz.yaml, wherever it is run from); else the quiz.yaml of the clone it was built in.
std::string default_quiz_path() {
  if (const char* env = std::getenv("AMP_LAB_QUIZ"); env && *env) return env;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = (exe.parent_path() / AMP_LAB_QUIZ_FROM_BIN).lexically_normal();
    if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
  }
  return AMP_LAB_SOURCE_DIR "/quiz.yaml";
}

runner::Quiz load(const std::string& path) {
  return runner::load_quiz(path, [](const std::string& id) -> std::optional<std::vector<std::string>> {
    const lab::LabInfo* info = lab::find_lab(id);
    if (!info || info->id != id) return std::nullopt;
    return info->provides;
  });
}

// The quiz file's track `name`; an unknown one is bad usage, not a bad file.
runner::Quiz track_of(const runner::Quiz& quiz, const std::string& name) {
  try {
    return runner::select_track(quiz, name);
  } catch (const runner::QuizError& e) {
    throw lab::UsageError(fmt::format("--track: {}", e.what()));
  }
}

std::vector<int> track_numbers(const runner::Quiz& quiz) {
  std::vector<int> numbers;
  for (const auto& q : quiz.questions) numbers.push_back(q.number);
  return numbers;
}

int cmd_quiz(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab quiz", "Take the mixed-precision quiz; every question runs its lab first.");
  lab::add_context_options(options);
  options.add_options()
      ("answers", "answer without prompts: one letter per question, s to skip (e.g. acbdbbcd)", cxxopts::value<std::string>())
      ("reveal", "run every lab and show the answer key with the explanations")
      ("track", "the questions to walk: core (the default), recipes, or all", cxxopts::value<std::string>())
      ("only", "ask only these questions of the track, e.g. 1,3,5", cxxopts::value<std::string>())
      ("json", "also write every observation and check of the walk to FILE", cxxopts::value<std::string>())
      ("no-color", "plain text (NO_COLOR is honoured too)")
      ("quiz", "the quiz file (default: " + default_quiz_path() + ")", cxxopts::value<std::string>())
      ("h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (lab::flag(args, "help")) {
    std::cout << options.help() << "\nAt a prompt: a-d answers, s skips, h shows a hint, q quits (so do EOF and Ctrl-C).\n";
    return lab::kExitPass;
  }
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const runner::Quiz file = load(args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path());
  runner::WalkOptions walk;
  walk.track = args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id;
  const runner::Quiz quiz = track_of(file, walk.track);
  walk.ctx = lab::context_from(args, &walk.device_notice);
  if (args.count("only")) walk.only = lab::parse_question_list(args["only"].as<std::string>(), track_numbers(quiz));
  if (args.count("answers")) {
    walk.answers = args["answers"].as<std::string>();
    for (char c : *walk.answers)
      if (!std::strchr("abcdsABCDS", c)) throw lab::UsageError(fmt::format("--answers: {} is not one of a, b, c, d or s", lab::quote(std::string(1, c))));
  }
  walk.reveal = lab::flag(args, "reveal");
  if (walk.reveal && walk.answers) throw lab::UsageError("--reveal and --answers do not go together");
  if (args.count("json")) walk.json_path = args["json"].as<std::string>();
  walk.color = lab::want_color(lab::flag(args, "no-color"));
  // Pause between questions only for a person: not when scripted, revealed, or reading from a pipe.
  walk.pause = !walk.answers && !walk.reveal && isatty(STDIN_FILENO);
  return runner::walk(quiz, walk, std::cin, std::cout);
}

int cmd_list(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab list", "List the tracks, their labs and the questions they back.");
  options.add_options()("quiz", "the quiz file", cxxopts::value<std::string>());
  auto args = options.parse(argc, argv);
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const runner::Quiz quiz = load(args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path());
  for (const auto& track : quiz.tracks) {
    const bool is_default = track.id == quiz.tracks.front().id;
    std::cout << fmt::format("track {}: {}  ({}amp-lab quiz{})\n", track.id, track.title, is_default ? "default: " : "",
                             is_default ? "" : " --track " + track.id);
    std::vector<std::vector<std::string>> rows;
    for (const auto& q : runner::select_track(quiz, track.id).questions) {
      const lab::LabInfo* info = lab::find_lab(q.lab);
      std::string prompt = q.prompt.size() > 58 ? q.prompt.substr(0, 55) + "..." : q.prompt;
      rows.push_back({std::to_string(q.number), q.lab, info->executable, prompt});
    }
    for (const auto& line : lab::format_table({"Q", "lab (amp-lab run LAB)", "executable", "question"}, rows))
      std::cout << "  " << line << "\n";
    std::cout << "\n";
  }
  std::cout << fmt::format("track {}: every question above, in order  (amp-lab quiz --track {})\n", runner::kAllTracks,
                           runner::kAllTracks);
  return lab::kExitPass;
}

int cmd_run(int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
      std::cout << "usage: amp-lab run LAB [--device auto|cpu|cuda] [--dtype fp16|bf16] [--seed N] [--quick] [--flip] [--json]\n"
                   "LAB: an id from `amp-lab list`, or a question number\n";
      return lab::kExitPass;
    }
    throw lab::UsageError("which lab? (see: amp-lab list)");
  }
  const lab::LabInfo* info = lab::find_lab(argv[1]);
  if (!info) throw lab::UsageError(fmt::format("no lab named {} (see: amp-lab list)", lab::quote(argv[1])));
  std::vector<const char*> rest{"amp-lab run"};
  for (int i = 2; i < argc; ++i) rest.push_back(argv[i]);
  return lab::lab_cli(*info, static_cast<int>(rest.size()), rest.data(), "amp-lab run " + info->id);
}

int cmd_info(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab info", "LibTorch build, the CPU's 16-bit features, the CUDA device.");
  options.add_options()("h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  if (lab::flag(args, "help")) std::cout << options.help();
  else runner::print_info(std::cout);
  return lab::kExitPass;
}

// The quiz answers and the exercises saved in progress.json, with the quiz file's questions.
int cmd_progress(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab progress", "Your quiz answers and exercises so far.");
  options.add_options()("quiz", "the quiz file", cxxopts::value<std::string>())("no-color", "plain text");
  auto args = options.parse(argc, argv);
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const runner::Quiz quiz = load(args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path());
  std::string why;
  const auto dir = runner::default_state_dir(&why);
  if (!dir) throw lab::UsageError("no progress is kept: " + why);
  runner::ProgressStore store(*dir);
  runner::print_progress(std::cout, store.load(), quiz, store.file(), lab::terminal_width(),
                         lab::want_color(lab::flag(args, "no-color")));
  return lab::kExitPass;
}

constexpr const char* kCommands[] = {"quiz",     "run",   "list",  "info",    "exercises",
                                     "exercise", "check", "watch", "progress"};

int dispatch(const std::string& command, int argc, const char* const* argv) {
  if (command == "quiz") return cmd_quiz(argc, argv);
  if (command == "run") return cmd_run(argc, argv);
  if (command == "list") return cmd_list(argc, argv);
  if (command == "info") return cmd_info(argc, argv);
  if (command == "exercises") return runner::cmd_exercises(argc, argv);
  if (command == "exercise") return runner::cmd_exercise(argc, argv);
  if (command == "check") return runner::cmd_check(argc, argv);
  if (command == "watch") return runner::cmd_watch(argc, argv);
  if (command == "progress") return cmd_progress(argc, argv);
  throw lab::UsageError("unknown command " + lab::quote(command) +
                        " (commands: quiz, run, list, info, exercises, exercise, check, watch, progress)");
}

}  // namespace

int main(int argc, char** argv) {
  // First, so that a signal while the quiz and LibTorch load still ends with the summary and 128+signo.
  if (argc >= 2 && std::string_view(argv[1]) == "quiz") runner::install_interrupt_handler();
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return lab::kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return lab::kExitPass;
  }
  if (command == "--version") {
    std::printf("amp-lab %s, built with LibTorch %s\n", AMP_LAB_VERSION, runner::libtorch_build().c_str());
    return lab::kExitPass;
  }
  const int sub_argc = argc - 1;
  const char* const* sub_argv = argv + 1;
  const bool known = std::find(std::begin(kCommands), std::end(kCommands), command) != std::end(kCommands);
  const std::string name = known ? "amp-lab " + command : "amp-lab";  // names the command in messages
  try {
    lab::check_stdout_open();
    lab::check_argv(argc, argv);  // before cxxopts sees anything
    const int code = dispatch(command, sub_argc, sub_argv);
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
  } catch (const runner::ExerciseSourceError& e) {  // the exercises' build or files: cannot go on
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::safe_line(e.what()).c_str());
    return lab::kExitLabError;
  } catch (const lab::OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::safe_line(e.what()).c_str());
    return lab::kExitLabError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), lab::one_line(e).c_str());
    return lab::kExitLabError;
  }
}
