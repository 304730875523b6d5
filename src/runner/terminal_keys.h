// One key at a terminal: the walk's prompts, its pause and its pager act on a key as it is pressed, without
// Enter. A pipe, a file or --answers never get here: they are read a line at a time, as before.
//
// The terminal's mode, moment by moment (kept in the signal handlers' globals, so that they can restore it):
//   - While a KeyTerminal lives and no key is awaited (a lab runs, a screen is printed, the instant between a
//     prompt and its read): the terminal's own mode with ECHO and ECHONL off, nothing else changed (line
//     editing, Ctrl-C, Ctrl-Z and the output as they were). A key typed then waits in the terminal unseen
//     and is echoed once, by the walk, at the prompt that reads it; with ECHO on the terminal would echo it
//     where it was typed, and the walk a second time at the prompt. The labs never see it: their stdin is
//     /dev/null and their output is captured.
//   - While a key is awaited (a read): non-canonical and without echo, so one key is a reply (ISIG kept:
//     Ctrl-C and Ctrl-Z still work); the walk echoes the reply's visible keys and its line break itself.
//     Back to the mode above as soon as the key is read, however the read ends (a key, end of input, an
//     exception).
//   - Otherwise the terminal's mode as it was when the KeyTerminal began, restored exactly: when it ends
//     (its destructor, on every way out of the walk; std::exit and std::terminate too), on SIGINT, SIGTERM
//     and SIGHUP (runner/interrupt.h calls restore_terminal_mode(), and no later read or SIGCONT sets a
//     mode again), and for the shell while the walk is stopped by Ctrl-Z: SIGTSTP restores it before the
//     walk stops, and SIGCONT sets the walk's mode again (and shows the prompt again while a key is
//     awaited) once the walk, back in the foreground, goes on.
// Only the foreground process group changes the mode: a walk started or put in the background leaves the
// terminal alone until it is brought back (fg sends SIGCONT); a read there stops it (SIGTTIN), as job
// control does.
#pragma once

#include <istream>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace runner {

// The walk's input and output at a terminal. in() reads stdin a reply at a time: the keys typed up to
// Enter, or, when no more keys wait, those typed so far, so that one key pressed alone is a whole reply and
// "a" then Enter typed together is the reply "a", as a line used to be; Ctrl-D is end of input. Each reply
// is echoed on out() as the terminal would have echoed the line. out() writes to `screen` (std::cout) and
// remembers the line it is on, the prompt shown again after Ctrl-Z and fg.
class KeyTerminal {
 public:
  explicit KeyTerminal(std::ostream& screen);
  ~KeyTerminal();
  KeyTerminal(const KeyTerminal&) = delete;
  KeyTerminal& operator=(const KeyTerminal&) = delete;

  std::istream& in() { return in_; }
  std::ostream& out() { return out_; }

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
  std::istream in_;
  std::ostream out_;
};

// Restores the terminal's mode as it was when the KeyTerminal began, for good: no later read or SIGCONT sets
// another. For the signal handlers, so async-signal-safe; a no-op when no KeyTerminal changed the mode.
void restore_terminal_mode() noexcept;

}  // namespace runner
