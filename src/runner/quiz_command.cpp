// amp-lab quiz (and amp-lab plan quiz): its flags, checked before any lab runs.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <cxxopts.hpp>

#include "lab/catalog.h"
#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/commands.h"
#include "runner/glossary.h"
#include "runner/lab_process.h"
#include "runner/quiz_order.h"
#include "runner/terminal_keys.h"
#include "runner/walk.h"

namespace runner {
namespace {

cxxopts::Options quiz_options(const std::string& tracks) {
  cxxopts::Options options("amp-lab quiz",
                           "Take the mixed-precision quiz; every question runs its lab first.");
  lab::add_context_options(options);
  options.add_options()("answers",
                        "answer without prompts: one letter per question as shown, s to skip (e.g. acbdbbcd)",
                        cxxopts::value<std::string>())(
      "answer-ids",
      "the same, each option named by its id, its letter in the quiz file, whatever the order shown",
      cxxopts::value<std::string>())(
      "file-order", "show the options in the quiz file's order, not in the order drawn for you")(
      "order-seed", "draw the options' order from seed N, not from the one saved for you",
      cxxopts::value<std::string>())("reveal", "run every lab and show the answer key with the explanations")(
      "track", "the questions to walk: " + tracks, cxxopts::value<std::string>())(
      "only", "ask only these questions of the track, e.g. 1,3,5", cxxopts::value<std::string>())(
      "resume", "go on with the track's questions not answered yet (progress is saved as you answer)")(
      "retry", "ask again the track's questions last answered wrong or skipped")(
      "reset", "forget the track's saved progress (with --only, just those questions)")(
      "json", "also write every observation and check of the walk to FILE", cxxopts::value<std::string>())(
      "no-color", "plain text (NO_COLOR is honoured too)")(
      // Whole up to 1024 glyphs: a clone's path is often longer than escape()'s usual 120.
      "quiz", "the quiz file (default: " + lab::escape(default_quiz_path(), 1024) + ")",
      cxxopts::value<std::string>())("h,help", "show this help");
  return options;
}

// "core (the default, 8 questions), recipes (4), scale (2), or all", from the quiz file itself.
std::string track_list(const std::string& quiz_path) {
  try {
    const Quiz quiz = load(quiz_path);
    std::string text;
    for (const auto& t : quiz.tracks) {
      const size_t n = select_track(quiz, t.id).questions.size();
      text += fmt::format("{} ({}{}), ", t.id, t.id == quiz.tracks.front().id ? "the default, " : "",
                          fmt::format("{} question{}", n, n == 1 ? "" : "s"));
    }
    return text + "or " + kAllTracks + " (every question)";
  } catch (const std::exception& e) {
    return std::string("a track of the quiz file (") + lab::safe_line(e.what(), 100) + ")";
  }
}

int print_help(const cxxopts::ParseResult& args) {
  const std::string path = args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path();
  const size_t width = lab::terminal_width();
  std::cout
      << lab::help_text(quiz_options(track_list(path)), width) << "\n"
      << lab::paragraph(
             "",
             "At a prompt: a-d answers, s skips, h shows a hint, t the terms, q quits (so do end of input "
             "and Ctrl-C). At the pause after an answer: o the other options, d the lab's details, c its "
             "checks, t the terms; Enter goes on.",
             width, 0)
      << "\n";
  lab::flush_stdout();
  return lab::kExitPass;
}

// The quiz file's track `name`; an unknown one is bad usage, not a bad file.
Quiz track_of(const Quiz& quiz, const std::string& name) {
  try {
    return select_track(quiz, name);
  } catch (const QuizError& e) {
    throw lab::UsageError(fmt::format("--track: {}", e.what()));
  }
}

std::vector<int> track_numbers(const Quiz& quiz) {
  std::vector<int> numbers;
  for (const auto& q : quiz.questions) numbers.push_back(q.number);
  return numbers;
}

// The labs can tell whether CUDA is there; the runner has no LibTorch, but without NVIDIA's driver there is
// surely none, and --device cuda is refused before any lab runs.
void check_cuda(const lab::ContextArgs& c) {
  std::error_code ec;
  if (c.device == "cuda" && !std::filesystem::exists("/proc/driver/nvidia/version", ec) &&
      !std::filesystem::exists("/dev/nvidiactl", ec))
    throw lab::UsageError("--device cuda: no CUDA device is available here (use --device cpu or auto)");
}

std::vector<std::string> lab_flags(const lab::ContextArgs& c) {
  std::vector<std::string> flags{"--device", c.device, "--seed", std::to_string(c.seed)};
  if (c.dtype) flags.insert(flags.end(), {"--dtype", *c.dtype});
  if (c.quick) flags.push_back("--quick");
  if (c.flip) flags.push_back("--flip");
  return flags;
}

// --order-seed N: a whole number from 0 to 2^53-1.
std::uint64_t order_seed_of(const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 16 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoull(text) > kMaxLearnerSeed)
    throw lab::UsageError(fmt::format("--order-seed: {} is not a whole number from 0 to {}",
                                      lab::quote(text, 30), kMaxLearnerSeed));
  return std::stoull(text);
}

// The options' order of this walk: the seed (--order-seed, else the learner's saved one, else one drawn
// now, which the walk's first saved answer saves as the learner's) and each question's attempts so far.
// Nothing is written here: a walk refused later (a bad --json) leaves the progress as it was.
void choose_order(WalkOptions& w, std::optional<ProgressStore>& store) {
  std::optional<Progress> saved;
  if (store && std::filesystem::exists(store->file())) saved = store->load();
  if (!w.file_order && !w.order_seed) {
    w.order_seed = saved && saved->order_seed ? *saved->order_seed : new_learner_seed();
    w.seed_is_learners = true;
  }
  if (saved)
    for (const auto& [track, questions] : saved->quiz)
      for (const auto& [number, record] : questions) w.attempts_before[record.id] = record.attempts;
}

struct Parsed {
  Quiz quiz;  // the chosen track's questions
  WalkOptions walk;
  std::optional<ProgressStore> store;  // where answers typed by a person are saved
};

// --resume and --retry choose the questions from the saved progress; --only chooses them by number.
std::vector<int> chosen_questions(const cxxopts::ParseResult& args, const Quiz& track,
                                  std::optional<ProgressStore>& store) {
  const bool resume = lab::flag(args, "resume"), retry = lab::flag(args, "retry");
  if (resume + retry + static_cast<bool>(args.count("only")) > 1)
    throw lab::UsageError("--only, --resume and --retry choose the questions: give one of them");
  if (args.count("only"))
    return lab::parse_question_list(args["only"].as<std::string>(), track_numbers(track));
  if (!resume && !retry) return {};
  std::string why;
  if (!store && !(store = default_progress_store(&why)))
    throw lab::UsageError(fmt::format("--{}: no saved progress: {}", resume ? "resume" : "retry", why));
  const std::vector<int> numbers =
      resume ? resume_questions(store->load(), track) : retry_questions(store->load(), track);
  if (numbers.empty())
    throw lab::UsageError(
        resume ? "--resume: every question of this track has an answer saved (--retry asks the missed ones)"
               : "--retry: no question of this track was last answered wrong or skipped");
  return numbers;
}

Parsed parse_quiz_command(const cxxopts::ParseResult& args, const Quiz& file, const std::string& quiz_path) {
  Parsed p{track_of(file, args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id),
           {}};
  WalkOptions& w = p.walk;
  w.track = args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id;
  w.context = lab::context_args(args);
  w.lab_flags = lab_flags(w.context);
  w.only = chosen_questions(args, p.quiz, p.store);
  if (args.count("answers") && args.count("answer-ids"))
    throw lab::UsageError("--answers and --answer-ids do not go together: give one of them");
  for (const char* flag : {"answers", "answer-ids"}) {
    if (!args.count(flag)) continue;
    w.answers = args[flag].as<std::string>();
    w.answers_by_id = std::string(flag) == "answer-ids";
    if (const size_t bad = w.answers->find_first_not_of("abcdsABCDS"); bad != std::string::npos)
      throw lab::UsageError(fmt::format("--{}: {} is not one of a, b, c, d or s", flag,
                                        lab::quote(lab::character_at(*w.answers, bad))));
    const size_t asked = w.only.empty() ? p.quiz.questions.size() : w.only.size();
    if (w.answers->size() != asked)
      throw lab::UsageError(fmt::format("--{} has {} for {}", flag, lab::counted(w.answers->size(), "letter"),
                                        lab::counted(asked, "question")));
  }
  w.file_order = lab::flag(args, "file-order");
  if (args.count("order-seed")) {
    if (w.file_order)
      throw lab::UsageError("--file-order and --order-seed do not go together: give one of them");
    w.order_seed = order_seed_of(args["order-seed"].as<std::string>());
  }
  w.reveal = lab::flag(args, "reveal");
  if (w.reveal && w.answers) throw lab::UsageError("--reveal and --answers do not go together");
  if (args.count("json")) w.json_path = args["json"].as<std::string>();
  // The quiz file this walk reads; --json is checked against it and every other file amp-lab reads (the
  // glossary, exercises.yaml, the saved progress and its lock, the labs' sources: runner/data_files.h).
  w.inputs = {{quiz_path, "the quiz file"}};
  // Answers typed by a person are saved; scripted ones (--answers) and the answer key (--reveal) are not.
  if (!w.answers && !w.reveal && !p.store) p.store = default_progress_store(nullptr);
  w.command = command_name() + " quiz" + (w.track != file.tracks.front().id ? " --track " + w.track : "") +
              (args.count("quiz") ? " --quiz " + lab::shell_word(quiz_path) : "");
  return p;
}

}  // namespace

// --reset: forgets the track's saved progress (every track's for --track all), or with --only just those
// questions', and says so. --resume and --retry choose questions to ask, not to forget: refused with it.
int reset_progress(const cxxopts::ParseResult& args, const Quiz& file) {
  const std::string track = args.count("track") ? args["track"].as<std::string>() : file.tracks.front().id;
  const Quiz questions = track_of(file, track);  // an unknown track is refused
  if (lab::flag(args, "resume") || lab::flag(args, "retry"))
    throw lab::UsageError(
        "--reset forgets saved answers: give it alone, or with --only N to forget question N");
  std::string why;
  auto store = default_progress_store(&why);
  if (!store) throw lab::UsageError("--reset: no saved progress: " + why);
  if (args.count("only")) {
    const std::vector<int> only =
        lab::parse_question_list(args["only"].as<std::string>(), track_numbers(questions));
    const bool saved = store->update([&](Progress& p) {
      for (const auto& q : questions.questions)
        if (std::count(only.begin(), only.end(), q.number)) p.quiz[q.track].erase(q.number);
    });
    if (!saved) return lab::kExitLabError;  // the store said why
    std::string list;
    for (const int n : only) list += (list.empty() ? "" : ",") + std::to_string(n);
    std::cout << lab::paragraph(
                     "",
                     fmt::format("Progress of question{} {} forgotten ({}).", only.size() == 1 ? "" : "s",
                                 list, lab::escape(store->file().string())),
                     lab::terminal_width(), 2)
              << "\n";
    return lab::kExitPass;
  }
  if (!store->reset(track == kAllTracks ? "" : track)) return lab::kExitLabError;  // the store said why
  std::cout << lab::paragraph("",
                              fmt::format("Progress of {} forgotten ({}).",
                                          track == kAllTracks ? "every track" : "track " + track,
                                          lab::escape(store->file().string())),
                              lab::terminal_width(), 2)
            << "\n";
  return lab::kExitPass;
}

int cmd_quiz(int argc, const char* const* argv) {
  auto args = quiz_options("").parse(argc, argv);
  if (lab::flag(args, "help")) return print_help(args);
  if (!args.unmatched().empty())
    throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
  const std::string quiz_path = args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path();
  const Quiz file = load(quiz_path);
  if (lab::flag(args, "reset")) return reset_progress(args, file);
  const Glossary glossary = load_glossary(glossary_path());  // before any lab runs, like the quiz file
  Parsed p = parse_quiz_command(args, file, quiz_path);
  p.walk.glossary = &glossary;
  check_cuda(p.walk.context);
  p.walk.color = lab::want_color(lab::flag(args, "no-color"));
  p.walk.live = isatty(STDOUT_FILENO);
  p.walk.width = lab::terminal_width();
  p.walk.rows = lab::terminal_rows();
  p.walk.follow_terminal = isatty(STDOUT_FILENO);  // re-laid out when the terminal is resized
  if (p.store && !p.walk.answers && !p.walk.reveal) p.walk.progress = &*p.store;
  // A walk that saves nothing reads the learner's seed and attempts all the same.
  std::optional<ProgressStore> reader = p.store ? std::nullopt : default_progress_store(nullptr);
  choose_order(p.walk, p.store ? p.store : reader);
  // Pause between questions only for a person: not when scripted, revealed, or reading from a pipe.
  p.walk.pause = !p.walk.answers && !p.walk.reveal && isatty(STDIN_FILENO);
  if (p.walk.pause && isatty(STDOUT_FILENO)) {  // a person at a terminal: one key, no Enter
    KeyTerminal terminal(std::cout);
    return walk(p.quiz, p.walk, terminal.in(), terminal.out());
  }
  return walk(p.quiz, p.walk, std::cin, std::cout);
}

int cmd_plan(int argc, const char* const* argv) {
  try {
    const std::string command = argc >= 2 ? argv[1] : "";
    std::vector<std::string> exes;
    if (command == "quiz") {
      auto args = quiz_options("").parse(argc - 1, argv + 1);
      const std::string quiz_path = args.count("quiz") ? args["quiz"].as<std::string>() : default_quiz_path();
      const Parsed p = parse_quiz_command(args, load(quiz_path), quiz_path);
      for (const auto& q : p.quiz.questions)
        if (p.walk.only.empty() || std::count(p.walk.only.begin(), p.walk.only.end(), q.number))
          if (const lab::LabDecl* d = lab::find_decl(q.lab)) exes.push_back(d->executable());
    } else if (command == "run" && argc >= 3) {
      if (const lab::LabDecl* d = lab::find_decl(argv[2])) exes.push_back(d->executable());
    } else if (command == "info") {
      exes.push_back("amp-lab-info");
    }
    std::vector<std::string> seen;
    for (const auto& e : exes)
      if (std::find(seen.begin(), seen.end(), e) == seen.end()) {
        seen.push_back(e);
        std::cout << e << "\n";
      }
  } catch (const std::exception&) {  // the command itself will say what is wrong
  }
  lab::flush_stdout();
  return lab::kExitPass;
}

}  // namespace runner
