#include "runner/walk.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/interrupt.h"
#include "runner/walk_state.h"
#include "runner/walk_terms.h"

namespace runner {
namespace {

// One line typed at a prompt, without surrounding blanks; nullopt at end of input or on a signal (the
// reason goes to stop_reason).
std::optional<std::string> read_reply(std::istream& in, std::ostream& out, std::string* stop_reason) {
  std::string line;
  // A signal stops the walk even when lines typed ahead wait in the input's buffer.
  if (interrupt_signal() || !std::getline(in, line)) {
    *stop_reason = interrupt_signal() ? interrupt_reason() : "end of input";
    out << "\n";
    return std::nullopt;
  }
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  return first == std::string::npos ? "" : line.substr(first, last - first + 1);
}

// Takes the terminal's new size after a resize (SIGWINCH), when the walk follows the terminal: whatever is
// printed next (the answer screen, the pause's keys, the next page, a retry message) is laid out in it.
// Returns whether the size changed.
bool follow_resize(WalkOptions& options) {
  if (!options.follow_terminal || !take_resize()) return false;
  options.width = lab::terminal_width();
  options.rows = lab::terminal_rows();
  return true;
}

// Reads one answer. Returns the option's id (the letter typed is its place as shown), -1 for skip, or
// nullopt to stop (q, EOF, Ctrl-C).
std::optional<int> ask(Answered& a, const std::string& terms, std::istream& in, std::ostream& out,
                       const lab::Style& style, WalkOptions& options, std::string* stop_reason) {
  const Question& q = *a.question;
  const int n = static_cast<int>(q.options.size());
  for (;;) {
    out << fmt::format("Your answer [a-{}; s skip, h hint, {}q quit]: ", letter(n - 1),
                       terms.empty() ? "" : "t terms, ")
        << std::flush;
    const std::optional<std::string> reply = read_reply(in, out, stop_reason);
    if (!reply) return std::nullopt;
    follow_resize(options);
    const std::string& word = *reply;
    if (word.size() == 1) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(word[0])));
      if (c >= 'a' && c < 'a' + n) return a.order[static_cast<size_t>(c - 'a')];
      if (c == 's') return -1;
      if (c == 'q') {
        *stop_reason = "quit";
        return std::nullopt;
      }
      if (c == 'h') {
        ++a.hints;
        print_hint(a, out, style, options.width);
        continue;
      }
      if (c == 't' && !terms.empty()) {  // the glosses again: on a full screen they may have scrolled away
        out << terms;
        continue;
      }
    }
    out << lab::wrap(
               fmt::format("Please answer with one letter a-{} (or s to skip, h for a hint, {}q to quit); "
                           "got {}.",
                           letter(n - 1), terms.empty() ? "" : "t for the terms, ",
                           lab::quote(word, /*max_glyphs=*/20)),
               options.width)
        << "\n";
  }
}

// The rows `line` takes on a screen `width` columns wide: a line wider than the screen wraps.
size_t screen_rows(std::string_view line, size_t width) {
  const size_t glyphs = lab::display_width(std::string(line));
  return width == 0 || glyphs <= width ? 1 : (glyphs + width - 1) / width;
}

// `text` a screen at a time: all of it when it fits above the pause line, else a screen's rows less the
// "more" line (wrapped to the width) and the blank above it, then that line (Enter shows the next screen, q
// goes back to the pause). A resize between screens takes effect at the next. Returns false to stop the
// walk (EOF, Ctrl-C).
bool page(const std::string& text, WalkOptions& options, std::istream& in, std::ostream& out,
          const lab::Style& style, std::string* stop_reason) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(std::string_view(text).substr(at, end - at));
    at = end + 1;
  }
  size_t used = 0;  // rows of this screen printed so far
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string more =
        lab::wrap(fmt::format("-- more ({} of {} lines): Enter, q back --", k, lines.size()), options.width);
    const size_t more_rows = static_cast<size_t>(std::count(more.begin(), more.end(), '\n')) + 1;
    const size_t room = options.rows > more_rows + 2 ? options.rows - more_rows - 1 : 2;
    const size_t need = screen_rows(lines[k], options.width);
    if (used > 0 && used + need > room) {
      out << style.dim(more) << " " << std::flush;
      const std::optional<std::string> reply = read_reply(in, out, stop_reason);
      if (!reply) return false;
      if (!reply->empty() && std::tolower(static_cast<unsigned char>(reply->front())) == 'q') break;
      follow_resize(options);
      used = 0;
    }
    out << lines[k] << "\n";
    used += need;
  }
  return true;
}

// After an answer screen, so that it stays on screen until the learner has read it: Enter goes on; a key
// shows one more part (the other options, the lab's details, its checks, the terms), paged to the screen.
// Returns false to stop the walk (q, EOF, Ctrl-C).
// The parts are laid out anew after a resize.
bool pause(const Answered& a, bool last, WalkOptions& options, std::istream& in, std::ostream& out,
           const lab::Style& style, std::string* stop_reason) {
  std::vector<AnswerPart> parts = answer_parts(a, options, style);
  std::string keys = last ? "Enter summary" : "Enter next question";
  for (const auto& p : parts) keys += fmt::format(" · {} {}", p.key, p.name);
  keys += " · q quit";
  for (;;) {
    out << "\n" << style.dim(lab::wrap(keys, options.width)) << " " << std::flush;
    const std::optional<std::string> reply = read_reply(in, out, stop_reason);
    if (!reply) return false;
    if (reply->empty()) return true;
    if (follow_resize(options)) parts = answer_parts(a, options, style);
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(reply->front())));
    if (c == 'q' && reply->size() == 1) {
      *stop_reason = "quit";
      return false;
    }
    const auto part =
        std::find_if(parts.begin(), parts.end(), [&](const AnswerPart& p) { return p.key == c; });
    if (part != parts.end() && reply->size() == 1) {
      if (!page(part->text, options, in, out, style, stop_reason)) return false;
      continue;
    }
    std::string choices;
    for (const auto& p : parts) choices += fmt::format("{}, ", p.key);
    out << lab::paragraph("",
                          fmt::format("Press Enter to go on, or one of {}q; got {}.", choices,
                                      lab::quote(*reply, /*max_glyphs=*/20)),
                          options.width, 0)
        << "\n";
  }
}

std::vector<Answered> questions_walked(const Quiz& quiz, const WalkOptions& options) {
  std::vector<Answered> walked;
  for (const auto& q : quiz.questions)
    if (options.only.empty() ||
        std::find(options.only.begin(), options.only.end(), q.number) != options.only.end()) {
      walked.emplace_back(&q);
      Answered& a = walked.back();
      a.decl = lab::find_decl(q.lab);
      const auto before = options.attempts_before.find(q.id);
      a.attempt = (before == options.attempts_before.end() ? 0 : before->second) + 1;
      const int n = static_cast<int>(q.options.size());
      a.order = options.file_order || !options.order_seed
                    ? file_order(n)
                    : draw_order(*options.order_seed, q.id, a.attempt, n);
    }
  // The command line checks this first (quiz_command.cpp); here it guards walk()'s own precondition.
  if (options.answers && options.answers->size() != walked.size())
    throw lab::UsageError(fmt::format("--answers has {} for {}",
                                      lab::counted(options.answers->size(), "letter"),
                                      lab::counted(walked.size(), "question")));
  return walked;
}

// Waits for the lab's build if it is being built, then runs it. A lab that cannot run costs one line.
void run_lab(Answered& a, const WalkOptions& options, std::ostream& out) {
  a.ran = true;
  if (!a.decl) {
    a.lab.kind = LabOutcome::Kind::Failed;
    a.lab.message = "no lab named " + lab::quote(a.question->lab);
    return;
  }
  if (auto why = wait_for_build(*a.decl, out, options.live)) {
    a.lab = std::move(*why);
    return;
  }
  a.lab = run_lab_process(*a.decl, options.lab_flags, out, options.live);
  // The flags are the walk's: what is bad usage for one lab is for the walk.
  if (a.lab.kind == LabOutcome::Kind::Usage) throw lab::UsageError(a.lab.message);
  // A {key} the lab does not report is the quiz file's mistake: said now, before the question is asked,
  // rather than shown after the answer as a value that was not measured.
  if (!a.reported()) return;
  std::set<std::string> keys;
  for (const auto& o : a.lab.report->observations()) keys.insert(o.key);
  if (const auto name = unreported_placeholder(*a.question, keys))
    throw QuizError(
        fmt::format("{}: question {} ({}): {} is no observation lab {} reports (amp-lab run {} "
                    "--json lists them)",
                    options.inputs.empty() ? "the quiz file" : options.inputs.front().first,
                    a.question->number, a.question->id, *name, a.decl->id, a.decl->id));
}

// The learner's choice (or the scripted one): the option index, -1 to skip; nullopt stops the walk.
std::optional<int> answer_of(Answered& a, size_t i, const std::string& terms, WalkOptions& options,
                             std::istream& in, std::ostream& out, const lab::Style& style,
                             std::string* stop_reason) {
  if (!options.answers) return ask(a, terms, in, out, style, options, stop_reason);
  const char c = static_cast<char>(std::tolower(static_cast<unsigned char>((*options.answers)[i])));
  if (c == 's') {
    out << lab::paragraph("", "Your answer: s (scripted)", options.width, 2) << "\n";
    return -1;
  }
  // By id (--answer-ids) or by the letter shown; either way the screen names the letter shown.
  const int id = options.answers_by_id ? c - 'a' : a.order[static_cast<size_t>(c - 'a')];
  out << lab::paragraph("", fmt::format("Your answer: {} (scripted)", a.shown(id)), options.width, 2) << "\n";
  return id;
}

// Saves the answer (right, wrong or skipped, with the hints shown) as the walk goes; a failed save is
// warned about once by the store, and the walk goes on.
void save(const Answered& a, const WalkOptions& options) {
  if (!options.progress) return;
  const Outcome outcome = a.outcome == Asked::Right   ? Outcome::Right
                          : a.outcome == Asked::Wrong ? Outcome::Wrong
                                                      : Outcome::Skipped;
  Attempt attempt;
  attempt.outcome = outcome;
  attempt.answer = a.chosen >= 0 ? letter(a.chosen) : '\0';
  attempt.shown = a.chosen >= 0 ? a.shown(a.chosen) : '\0';
  attempt.order = order_letters(a.order);
  attempt.hints = a.hints;
  attempt.seconds = a.seconds;
  attempt.walk = options.track;
  options.progress->record(*a.question, std::move(attempt),
                           options.seed_is_learners ? options.order_seed : std::nullopt);
}

// One question: its lab, what it measured, the question, the answer and what follows it. Returns false
// when the walk stops (stop_reason says why).
bool walk_question(Answered& a, size_t i, size_t count, WalkOptions& options, std::istream& in,
                   std::ostream& out, std::set<std::string>& glossed, std::string* stop_reason) {
  const lab::Style style{options.color};
  // Nothing is worth running when no one can read it (stdout on a full disk, a closed pipe).
  if (!out.flush()) throw lab::OutputError("cannot write to standard output");
  print_banner(a, i, count, out, style, options.width, /*blank_line=*/i == 0 || !options.pause);
  run_lab(a, options, out);
  std::ostringstream question;  // printed after the lab: its lines are kept free on the screen
  print_question(*a.question, a.order, question, style, options.reveal, options.width);
  const std::string q = question.str();
  const size_t reserved = static_cast<size_t>(std::count(q.begin(), q.end(), '\n')) + 1;  // + the prompt
  // The prompt's terms are glossed with the lab's; the options' are not: a gloss of a term only one option
  // uses would point at that option.
  const std::string terms = print_lab(a, options, out, style, glossed, a.question->prompt, reserved);
  if (interrupt_signal()) {
    *stop_reason = interrupt_reason();
    return false;
  }
  out << q;
  if (options.reveal) {
    print_key(a, out, style, options.width);
    return true;
  }
  a.prompted = true;
  const auto asked_at = std::chrono::steady_clock::now();
  const std::optional<int> choice = answer_of(a, i, terms, options, in, out, style, stop_reason);
  if (!choice) return false;
  a.chosen = *choice;
  a.seconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - asked_at).count());
  a.outcome = a.chosen < 0 ? Asked::Skipped : a.chosen == a.question->answer ? Asked::Right : Asked::Wrong;
  save(a, options);
  if (!options.pause) {  // scripted or piped: everything, for reading and for tools
    print_answer(a, options, out, style);
    return true;
  }
  print_answer_screen(a, options, out, style);
  return pause(a, i + 1 == count, options, in, out, style, stop_reason);
}

}  // namespace

int walk(const Quiz& quiz, const WalkOptions& given, std::istream& in, std::ostream& out) {
  WalkOptions options = given;  // its width and rows follow the terminal when it is resized
  const lab::Style style{options.color};
  std::vector<Answered> walked = questions_walked(quiz, options);
  std::optional<JsonFile> json;
  if (options.json_path) json.emplace(*options.json_path, options.inputs);

  print_header(quiz, options, walked.size(), out, style);
  std::string stop_reason;
  // The terms glossed so far, each once; at a terminal with saved progress, once across walks too.
  const bool remember_terms = options.pause && options.progress;
  std::set<std::string> glossed =
      remember_terms ? terms_shown_before(options.progress) : std::set<std::string>{};
  for (size_t i = 0; i < walked.size(); ++i) {
    if (interrupt_signal()) {  // a signal while the quiz loaded, or during the pause
      stop_reason = interrupt_reason();
      break;
    }
    follow_resize(options);
    const size_t known = glossed.size();
    const bool went_on = walk_question(walked[i], i, walked.size(), options, in, out, glossed, &stop_reason);
    if (remember_terms && glossed.size() > known) remember_terms_shown(options.progress, glossed);
    if (!went_on) break;
  }
  print_summary(walked, quiz, options, stop_reason, out, style);
  if (json) json->commit(walk_json(walked, options, stop_reason.empty()));
  const Tally t = tally(walked);
  if (interrupt_signal()) return 128 + interrupt_signal();
  if (t.labs_failed) return lab::kExitLabError;
  return t.all_passed() ? lab::kExitPass : lab::kExitCheckFailed;
}

}  // namespace runner
