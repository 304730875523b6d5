// Ctrl-C, SIGTERM and SIGHUP during the walk. The runner installs the handler first thing in main(), so a
// signal that comes while the quiz loads still ends the walk with its summary and --json file.
//   SIGINT, while a lab runs: the first prints "stopping after this lab (Ctrl-C again to stop now)" at
//   once and lets the lab finish; the second stops the lab now (its process group is signalled).
//   SIGINT elsewhere (a prompt, the pause, waiting for a build), SIGTERM and SIGHUP: stop now.
//   A third signal ends the process at once, as the signal would by default.
// The walk then prints its summary and exits 128 + the first signal's number.
#pragma once

namespace runner {

void install_interrupt_handler();

// SIGWINCH (the terminal was resized): take_resize() is true once after each, so the walk reads the
// terminal's size again after the next key typed (a question's screen, the answer screen, a page). Installed with the interrupt handler, with SA_RESTART: a
// resize does not end a prompt's read.
bool take_resize();

// The first signal's number; 0 while none came.
int interrupt_signal();
// "interrupted", "terminated", "hang-up".
const char* interrupt_reason();
// True once the running lab should be stopped now, not after it ends.
bool stop_lab_now();

// While a lab runs (its process group, 0 when none runs), the first Ctrl-C lets it finish and says so; a
// third signal kills the group before the runner ends. Set by the code that waits for the lab.
void set_lab_running(int group);
// While a live progress line is on the terminal, the handler clears it before printing.
void set_progress_shown(bool shown);
// A file the process removes if a third signal ends it at once (the --json file's temporary twin).
// The path must stay valid until cleared with nullptr.
void set_remove_on_abort(const char* path);

}  // namespace runner
