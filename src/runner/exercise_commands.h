// The runner's exercise commands: amp-lab exercises | exercise ID | check ID | hint ID | watch ID.
// Each takes the arguments after the command's name (argv[0] is the command) and returns the exit code:
// 0 done (every check holds), 1 not yet (a check fails, the file does not build, the lab stopped),
// 2 bad usage (lab::UsageError, thrown), 3 the build itself could not run, 130 Ctrl-C in watch.
#pragma once

namespace runner {

int cmd_exercises(int argc, const char* const* argv);
int cmd_exercise(int argc, const char* const* argv);
int cmd_check(int argc, const char* const* argv);
int cmd_hint(int argc, const char* const* argv);
int cmd_watch(int argc, const char* const* argv);

}  // namespace runner
