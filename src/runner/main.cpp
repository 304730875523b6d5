// amp-lab: the quiz runner. `amp-lab quiz` walks the eight core questions, running each question's lab first;
// `--track recipes` walks the AMP-examples questions, `--track all` every question.
//   amp-lab quiz [--track core|recipes|all] [--answers abcd...] [--reveal] [--only 1,3] [--device auto|cpu|cuda]
//                [--dtype fp16|bf16] [--seed N] [--quick] [--json FILE] [--no-color] [--quiz FILE]
//   amp-lab run LAB [lab flags]     one lab, as its own executable would run it
//   amp-lab list                    the tracks, their labs and the questions they back
//   amp-lab info                    LibTorch, CPU 16-bit features, CUDA device
// Exit codes: 0 every lab's checks held, 1 a check failed, 2 bad usage or quiz file, 3 a lab failed to run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include <cxxopts.hpp>
#include <fmt/format.h>

#include "amp_lab_paths.h"
#include "lab/cli.h"
#include "lab/registry.h"
#include "lab/text.h"
#include "runner/info.h"
#include "runner/quiz.h"
#include "runner/walk.h"

namespace {

constexpr const char* kUsage =
    "usage: amp-lab <command> [flags]\n"
    "  quiz   take the quiz: each question runs its lab first   (amp-lab quiz --help)\n"
    "  run    run one lab: amp-lab run LAB [--device ..] [--dtype ..] [--seed ..] [--quick] [--json]\n"
    "  list   list the tracks, their labs and the questions they back\n"
    "  info   LibTorch build, the CPU's 16-bit features, the CUDA device\n";

std::string default_quiz_path() {
  if (const char* env = std::getenv("AMP_LAB_QUIZ"); env && *env) return env;
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

// --only takes question numbers as the walk shows them (Q9 is 9), limited to the chosen track's.
std::vector<int> parse_only(const std::string& text, const std::vector<runner::Question>& questions) {
  std::vector<int> numbers, valid;
  for (const auto& q : questions) valid.push_back(q.number);
  const bool contiguous = !valid.empty() && valid.back() - valid.front() + 1 == static_cast<int>(valid.size());
  std::string expected;
  for (int n : valid) expected += (expected.empty() ? "" : ", ") + std::to_string(n);
  if (contiguous) expected = fmt::format("from {} to {}", valid.front(), valid.back());
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || std::find(valid.begin(), valid.end(), n) == valid.end())
      throw lab::UsageError(fmt::format("--only '{}': expected question numbers {}, separated by commas", text, expected));
    numbers.push_back(static_cast<int>(n));
  }
  if (numbers.empty()) throw lab::UsageError("--only: no question numbers given");
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
      ("quiz", "the quiz file (default: quiz.yaml of this project)", cxxopts::value<std::string>())
      ("h,help", "show this help");
  auto args = options.parse(argc, argv);
  if (args.count("help")) {
    std::cout << options.help() << "\nAt a prompt: a-d answers, s skips, h shows a hint, q quits (so do EOF and Ctrl-C).\n";
    return lab::kExitPass;
  }
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument '" + args.unmatched().front() + "'");
  const runner::Quiz file = load(args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path());
  const runner::Quiz quiz = track_of(file, args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id);
  runner::WalkOptions walk;
  walk.ctx = lab::context_from(args, &walk.device_notice);
  walk.track = args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id;
  if (args.count("only")) walk.only = parse_only(args["only"].as<std::string>(), quiz.questions);
  if (args.count("answers")) {
    walk.answers = args["answers"].as<std::string>();
    for (char c : *walk.answers)
      if (!std::strchr("abcdsABCDS", c)) throw lab::UsageError(fmt::format("--answers: '{}' is not one of a, b, c, d or s", c));
  }
  walk.reveal = args.count("reveal") > 0;
  if (walk.reveal && walk.answers) throw lab::UsageError("--reveal and --answers do not go together");
  if (args.count("json")) walk.json_path = args["json"].as<std::string>();
  walk.color = lab::want_color(args.count("no-color") > 0);
  // Pause between questions only for a person: not when scripted, revealed, or reading from a pipe.
  walk.pause = !walk.answers && !walk.reveal && isatty(STDIN_FILENO);
  runner::install_interrupt_handler();
  return runner::walk(quiz, walk, std::cin, std::cout);
}

int cmd_list(int argc, const char* const* argv) {
  cxxopts::Options options("amp-lab list", "List the tracks, their labs and the questions they back.");
  options.add_options()("quiz", "the quiz file", cxxopts::value<std::string>());
  auto args = options.parse(argc, argv);
  if (!args.unmatched().empty()) throw lab::UsageError("unexpected argument '" + args.unmatched().front() + "'");
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
    for (const auto& line : lab::format_table({"Q", "lab (amp-lab run LAB)", "executable (build/bin)", "question"}, rows))
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
    throw lab::UsageError("run: which lab? (see: amp-lab list)");
  }
  const lab::LabInfo* info = lab::find_lab(argv[1]);
  if (!info) throw lab::UsageError(fmt::format("run: no lab named '{}' (see: amp-lab list)", argv[1]));
  std::vector<const char*> rest{"amp-lab run"};
  for (int i = 2; i < argc; ++i) rest.push_back(argv[i]);
  return lab::lab_cli(*info, static_cast<int>(rest.size()), rest.data(), "amp-lab run " + info->id);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return lab::kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return lab::kExitPass;
  }
  const int sub_argc = argc - 1;
  const char* const* sub_argv = argv + 1;
  try {
    if (command == "quiz") return cmd_quiz(sub_argc, sub_argv);
    if (command == "run") return cmd_run(sub_argc, sub_argv);
    if (command == "list") return cmd_list(sub_argc, sub_argv);
    if (command == "info") {
      runner::print_info(std::cout);
      return lab::kExitPass;
    }
    std::fprintf(stderr, "amp-lab: unknown command '%s' (commands: quiz, run, list, info)\n", command.c_str());
    return lab::kExitUsage;
  } catch (const runner::QuizError& e) {
    std::fprintf(stderr, "amp-lab: %s\n", e.what());
    return lab::kExitUsage;
  } catch (const lab::UsageError& e) {
    std::fprintf(stderr, "amp-lab %s: %s\n", command.c_str(), e.what());
    return lab::kExitUsage;
  } catch (const cxxopts::exceptions::exception& e) {
    std::fprintf(stderr, "amp-lab %s: %s\n", command.c_str(), e.what());
    return lab::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "amp-lab %s: %s\n", command.c_str(), lab::one_line(e).c_str());
    return lab::kExitLabError;
  }
}
