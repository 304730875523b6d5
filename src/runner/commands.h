// The amp-lab commands (main.cpp dispatches): each returns the exit code or throws lab::UsageError,
// runner::QuizError or lab::OutputError, which main() prints as one line.
#pragma once

#include <string>

#include "runner/data_files.h"
#include "runner/quiz.h"

namespace runner {

// The quiz file (default_quiz_path(), runner/data_files.h, unless --quiz names one), its labs checked
// against labs/catalog.cpp.
Quiz load(const std::string& path);
// How the learner runs amp-lab ($AMP_LAB_COMMAND, set by scripts/amp-lab; else "amp-lab"), for the
// commands the runner suggests.
std::string command_name();

int cmd_quiz(int argc, const char* const* argv);
// `amp-lab plan COMMAND ARGS...`: the executables that command will run, in order, one a line (for
// scripts/amp-lab's build ahead); nothing when the arguments are bad (the command itself says why).
int cmd_plan(int argc, const char* const* argv);

}  // namespace runner
