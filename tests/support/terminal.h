// A program on a pseudo-terminal of a given size, as a person runs it: stdin is a tty (so the walk
// pauses), the terminal can be resized (TIOCSWINSZ, which sends SIGWINCH), and what it printed is kept.
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <string>
#include <vector>

namespace test_support {

class Terminal {
 public:
  // Runs argv[0] (a path) on a new pty of `columns` x `rows`, with `env` ("NAME=value") added and NO_COLOR
  // set. Ended with SIGKILL at destruction when still running.
  // With `as_job`, the program runs as a shell runs a foreground job: in a process group of its own under a
  // session leader that waits for it, so that Ctrl-Z stops it (a session leader's own group is orphaned:
  // it would not stop). The leader prints "[job stopped; terminal in raw mode]" when it stops and
  // "[job ended; terminal in line mode]" when it ends (the terminal's mode then), and exits as it did.
  Terminal(const std::vector<std::string>& argv, unsigned columns, unsigned rows,
           const std::vector<std::string>& env = {}, bool as_job = false);
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // Reads until `text` appears after the last match (or the program ends, or `timeout_s` pass); true when
  // it appeared. The match moves the read position past it.
  bool expect(const std::string& text, double timeout_s = 120);
  // The same for whichever of `texts` appears first: its index, or -1.
  int expect_any(const std::vector<std::string>& texts, double timeout_s = 120);
  void type(const std::string& keys);
  void resize(unsigned columns, unsigned rows);
  // The terminal's mode now: false when the program set it non-canonical (keys without Enter) or without
  // echo.
  bool line_mode() const;
  // The terminal's whole mode now (Linux: the master reports the terminal's), and as the pty began, before
  // the program ran.
  termios mode() const;
  const termios& first_mode() const { return first_mode_; }
  // Whether the program sets the terminal to read a key (non-canonical) within 2 s: the prompt is printed
  // just before the read sets it.
  bool awaits_key() const;
  // Sends `signo` to the terminal's foreground process group (the program, or the job).
  void signal_foreground(int signo);
  // Reads until the program ends; its exit code, 128 + N for signal N.
  int wait_exit(double timeout_s = 120);

  // Everything printed so far, with the pty's "\r\n" as "\n"; position() is where the last match ended.
  const std::string& screen() const { return screen_; }
  size_t position() const { return from_; }

 private:
  bool read_some(int timeout_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string screen_;
  size_t from_ = 0;
  termios first_mode_{};
};

// The lines of `text` ("\n"-separated; a last line without "\n" counts).
std::vector<std::string> lines_of(const std::string& text);
// Columns a line takes on screen: UTF-8 glyphs, not bytes.
size_t glyphs(const std::string& line);

}  // namespace test_support
