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

// Returns the exit code: 0 when every lab that ran passed its checks (and none failed to run).
int walk(const Quiz& quiz, const WalkOptions& options, std::istream& in, std::ostream& out);

// Installs a SIGINT handler (no SA_RESTART) so Ctrl-C ends the walk with its summary.
void install_interrupt_handler();

}  // namespace runner
