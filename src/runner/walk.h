// The quiz walk: for each question, run its lab (its own executable) and show what it measured under a
// neutral heading, with the terms it uses glossed, and ask; after the answer say whether it was right, give
// the correct option and why, and the learner's own option when wrong. At a terminal that is one screen,
// and the rest (the other options, the lab's details, its checks, the terms) is one key away at the pause
// that follows; scripted or piped, everything is printed. At the end the score, a summary that shows no
// answer of a question not answered, and the command that retries the missed ones.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lab/cli_args.h"
#include "runner/json_file.h"
#include "runner/progress.h"
#include "runner/quiz.h"

namespace runner {

class Glossary;

struct WalkOptions {
  lab::ContextArgs context;            // --device, --dtype, --seed, --quick, --flip as given (checked)
  std::vector<std::string> lab_flags;  // the same flags, passed on to every lab's executable
  std::string track;                   // the track walked ("core", "recipes", "all"), printed in the header
  std::vector<int> only;               // question numbers to ask; empty: all
  std::optional<std::string> answers;  // scripted answers, one letter per question (s skips), as shown
  bool answers_by_id = false;          // the scripted letters are the options' ids (quiz.yaml's letters)
  // The options' order: quiz.yaml's (`--file-order`), or drawn from the learner's seed, each question's id
  // and its attempt number (runner/quiz_order.h). Without a seed the file's order is shown.
  bool file_order = false;
  std::optional<std::uint64_t> order_seed;
  bool seed_is_learners =
      false;  // order_seed is the learner's (saved with the first answer saved), not --order-seed
  std::map<std::string, int> attempts_before;  // question id -> attempts saved before this walk
  bool reveal = false;                         // no questions: show the answer key with explanations
  bool pause = false;  // a person at a terminal: a short answer screen, the rest on keys at a pause
  std::optional<std::string> json_path;
  std::vector<Input>
      inputs;  // the quiz file: --json may not name it (nor any file runner/data_files.h names)
  bool color = false;
  bool live = false;                     // standard output is a terminal: live "running lab ..." lines
  std::string command = "amp-lab quiz";  // how to run this walk again, for the retry line ("... --only 2,4")
  size_t width = 80;                     // columns to lay everything out in (lab::terminal_width())
  size_t rows = 40;                      // the screen's rows (a terminal's, else $LINES, else 40)
  bool follow_terminal = false;          // read width and rows again after the terminal is resized
  ProgressStore* progress = nullptr;     // where each answer is saved as the walk goes; nullptr: not saved
  // The terms to gloss, one line each under a lab's measured part the first time the walk shows them, and
  // behind the t key; nullptr: none.
  const Glossary* glossary = nullptr;
};

// Returns the exit code: 0 when every lab that ran passed its checks, 1 when a check failed, 3 when a lab
// failed to run (crashed, not built, no report), 128+N when signal N stopped the walk (after the summary).
// A lab that is bad usage for the flags given (exit 2, e.g. --device cuda without a GPU) ends the walk with
// lab::UsageError. The --json file is prepared before the first lab runs (an unwritable path is a
// UsageError up front); a failed write to it or to `out` is a lab::OutputError.
int walk(const Quiz& quiz, const WalkOptions& options, std::istream& in, std::ostream& out);

}  // namespace runner
