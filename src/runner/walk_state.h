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
#include "runner/walk.h"

namespace runner {

enum class Asked { Right, Wrong, Skipped, NotAsked };

struct Answered {
  explicit Answered(const Question* q) : question(q) {}
  const Question* question;
  const lab::LabDecl* decl = nullptr;
  Asked outcome = Asked::NotAsked;
  int chosen = -1;   // the option index answered, -1 for none
  int hints = 0;     // how many times the hint was shown
  bool ran = false;  // the lab was started (or its build waited for)
  LabOutcome lab;
  bool reported() const { return ran && lab.kind == LabOutcome::Kind::Report; }
  bool lab_failed() const {
    return ran && lab.kind != LabOutcome::Kind::Report && lab.kind != LabOutcome::Kind::Interrupted;
  }
};

// The walk's totals, for the score line, the exit code and the JSON.
struct Tally {
  int right = 0, wrong = 0, skipped = 0, not_reached = 0;
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
// "━━ 2/14 · lab loss-scaling · labs/02_loss_scaling.cpp ━━"
void print_banner(const Answered& a, size_t index, size_t count, std::ostream& out, const lab::Style& style);
// What the lab measured (or everything, with --reveal), or the one line saying why there is nothing; then a
// gloss for each term the walk shows for the first time (`glossed` holds those already glossed), as many as
// fit on the screen with the `reserved` lines the question and its prompt take. Returns the glosses that
// did not fit, to show after the answer: nothing pushes the measured part off the screen.
std::string print_lab(const Answered& a, const WalkOptions& options, std::ostream& out,
                      const lab::Style& style, std::set<std::string>& glossed, size_t reserved);
void print_question(const Question& q, std::ostream& out, const lab::Style& style, bool mark_answer,
                    size_t width);
// "Hint: ..." with the measured numbers.
void print_hint(const Answered& a, std::ostream& out, const lab::Style& style, size_t width);
// After an answer: right or wrong, the correct option and why, the learner's option first among the wrong
// ones (marked as theirs), the others, then the lab's details and checks.
void print_answer(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style);
// --reveal: the explanation after the whole report.
void print_key(const Answered& a, std::ostream& out, const lab::Style& style, size_t width);
// The table, the score, the labs' checks and the commands that retry the missed and skipped questions
// and go on with those not reached.
void print_summary(const std::vector<Answered>& walked, const WalkOptions& options,
                   const std::string& stop_reason, std::ostream& out, const lab::Style& style);

// Everything the walk observed, for --json.
std::string walk_json(const std::vector<Answered>& walked, const WalkOptions& options, bool completed);

}  // namespace runner
