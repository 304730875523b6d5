// What the walk knows of each question as it goes: shared by the walk (walk.cpp), what it prints
// (walk_print.cpp) and the --json file (walk_json.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lab/catalog.h"
#include "lab/text.h"
#include "runner/lab_process.h"
#include "runner/quiz.h"
#include "runner/quiz_order.h"
#include "runner/walk.h"

namespace runner {

enum class Asked { Right, Wrong, Skipped, NotAsked };

struct Answered {
  explicit Answered(const Question* q) : question(q) {}
  const Question* question;
  const lab::LabDecl* decl = nullptr;
  Asked outcome = Asked::NotAsked;
  int chosen = -1;    // the option answered, by id (its index in quiz.yaml), -1 for none
  OptionOrder order;  // the options' ids in the order shown (runner/quiz_order.h)
  int attempt = 1;    // this attempt's number for the question (1: the learner's first)
  int seconds = -1;   // from the prompt to the answer
  // The letter option `id` was shown at.
  char shown(int id) const { return static_cast<char>('a' + shown_at(order, id)); }
  int hints = 0;     // how many times the hint was shown
  bool ran = false;  // the lab was started (or its build waited for)
  bool prompted =
      false;  // its question and prompt were shown (an unanswered one was left there, not unreached)
  LabOutcome lab;
  bool reported() const { return ran && lab.kind == LabOutcome::Kind::Report; }
  bool lab_failed() const {
    return ran && lab.kind != LabOutcome::Kind::Report && lab.kind != LabOutcome::Kind::Interrupted;
  }
};

// The walk's totals, for the score line, the exit code and the JSON.
struct Tally {
  int right = 0, wrong = 0, skipped = 0, left = 0, not_reached = 0;  // left: at its prompt, unanswered
  int labs_reported = 0, labs_passed = 0, labs_failed = 0;
  bool all_passed() const { return labs_failed == 0 && labs_passed == labs_reported; }
};
Tally tally(const std::vector<Answered>& walked);

inline char letter(int index) {
  return static_cast<char>('a' + index);
}

// The values of a question's {placeholders}: the observations its lab reported.
std::map<std::string, std::string> values_of(const Answered& a);

void print_header(const Quiz& quiz, const WalkOptions& options, size_t questions, std::ostream& out,
                  const lab::Style& style);
// "━━ 2/14 · lab loss-scaling · labs/02_loss_scaling/ ━━"
// The line wraps under a rule of the screen's width when it is wider than `width`. `blank_line`: a blank
// line above it (none right under a pause line, which already sets the question apart).
void print_banner(const Answered& a, size_t index, size_t count, std::ostream& out, const lab::Style& style,
                  size_t width, bool blank_line);
// What the lab measured (or everything, with --reveal), or the one line saying why there is nothing, and a
// gloss for each term it shows for the first time in the walk (`glossed` holds those already glossed), all
// before the question: under what was measured when that, the question and its prompt (`reserved` lines)
// fit on the screen, else above it, so that the measured part and the question stay on screen together.
// Returns the glosses of every term the measured part uses, for the prompt's "t" key.
// `also_shown`: the question's prompt, whose terms are glossed with the lab's (not its options': a gloss of
// a term only one option uses would point at it).
std::string print_lab(const Answered& a, const WalkOptions& options, std::ostream& out,
                      const lab::Style& style, std::set<std::string>& glossed, const std::string& also_shown,
                      size_t reserved);
// The prompt and the options in `order` (ids by position), lettered a, b, ... as shown.
void print_question(const Question& q, const OptionOrder& order, std::ostream& out, const lab::Style& style,
                    bool mark_answer, size_t width);
// "Hint: ..." with the measured numbers.
void print_hint(const Answered& a, std::ostream& out, const lab::Style& style, size_t width);
// After an answer: right or wrong, the correct option and why, the learner's option first among the wrong
// ones (marked as theirs), the others, then the lab's details and checks.
void print_answer(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style);
// The same at a terminal, as one screen: right or wrong, the correct option and why, the learner's own
// option when wrong, and one line when the lab's checks did not all hold. The rest is in answer_parts().
void print_answer_screen(const Answered& a, const WalkOptions& options, std::ostream& out,
                         const lab::Style& style);
// What the pause after an answer screen shows on a key: the other options' "Not x)", the lab's details,
// its checks, and the terms its screens use. Parts with nothing in them are left out.
struct AnswerPart {
  char key;          // 'o', 'd', 'c', 't'
  std::string name;  // "other options", as the pause line names it
  std::string text;  // laid out at the walk's width
};
std::vector<AnswerPart> answer_parts(const Answered& a, const WalkOptions& options, const lab::Style& style);
// --reveal: the explanation after the whole report.
void print_key(const Answered& a, std::ostream& out, const lab::Style& style, size_t width);
// The table, the score, the labs' checks and the commands that retry the missed and skipped questions
// and go on with those not reached.
// `track`: the track the walk's questions are from (the retry advice covers all of it).
void print_summary(const std::vector<Answered>& walked, const Quiz& track, const WalkOptions& options,
                   const std::string& stop_reason, std::ostream& out, const lab::Style& style);

// Everything the walk observed, for --json.
std::string walk_json(const std::vector<Answered>& walked, const WalkOptions& options, bool completed);

}  // namespace runner
