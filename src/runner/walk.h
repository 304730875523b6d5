// The quiz walk: for each question, run its lab and show what it measured (under a neutral heading),
// ask, then show the lab's checks and explain with the numbers just measured; then the score and a
// summary table.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lab/context.h"
#include "runner/quiz.h"

namespace runner {

struct WalkOptions {
  lab::Context ctx;
  std::string device_notice;           // what --device auto decided, printed in the header
  std::string track;                   // the track walked ("core", "recipes", "all"), printed in the header
  std::vector<int> only;               // question numbers to ask; empty: all
  std::optional<std::string> answers;  // scripted answers, one letter per question (s skips)
  bool reveal = false;                 // no questions: show the answer key with explanations
  bool pause = false;                  // after each explanation wait for Enter (a person at a terminal)
  std::optional<std::string> json_path;
  bool color = false;
};

// Returns the exit code: 0 when every lab that ran passed its checks (and none failed to run), 128+N when
// signal N stopped it (after the summary). The --json file is opened before the first lab runs (an
// unwritable path is a UsageError up front); a failed write to it or to `out` is a lab::OutputError.
int walk(const Quiz& quiz, const WalkOptions& options, std::istream& in, std::ostream& out);

// Installs handlers for SIGINT, SIGTERM and SIGHUP (no SA_RESTART, so a blocked read returns): the first
// signal ends the walk after the running lab, with its summary; the third ends the process at once.
void install_interrupt_handler();

}  // namespace runner
