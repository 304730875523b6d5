// One key at a terminal: the walk's prompts, its pause and its pager act on a key as it is pressed, without
// Enter. While the walk waits for a key, the terminal is in non-canonical mode without echo (the signal keys
// Ctrl-C and Ctrl-Z still work); it is restored as soon as the key is read, whatever way the read ends (a
// key, end of input, an exception), and by the signal handlers: SIGINT, SIGTERM and SIGHUP restore it
// (runner/interrupt.h); SIGTSTP restores it before the walk stops, and SIGCONT sets it again (and shows the
// prompt again) when the walk, back in the foreground, still waits. A pipe, a file or --answers never get
// here: they are read a line at a time, as before.
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

// Restores the terminal's mode when a read set it, and forgets that a read waits (no SIGCONT sets it
// again): for the signal handlers, so async-signal-safe.
void restore_terminal_mode() noexcept;

}  // namespace runner
