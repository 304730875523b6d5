#include "support/terminal.h"

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <utmp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace test_support {

namespace {

const char* mode_name(int fd) {
  termios t{};
  if (::tcgetattr(fd, &t) != 0) return "no mode";
  return (t.c_lflag & ICANON) && (t.c_lflag & ECHO) ? "line mode" : "raw mode";
}

// In the session leader of a new pty: runs `args` as its foreground job and reports on it (Terminal's
// `as_job`). Never returns.
[[noreturn]] void run_as_job(char* const* args) {
  int ready[2];
  if (::pipe(ready) != 0) ::_exit(127);
  const pid_t job = ::fork();
  if (job == 0) {
    ::setpgid(0, 0);
    char go = 0;
    ::close(ready[1]);
    if (::read(ready[0], &go, 1) != 1) ::_exit(127);  // the terminal is the job's before it reads
    ::execv(args[0], args);
    ::_exit(127);
  }
  ::setpgid(job, job);
  ::tcsetpgrp(STDIN_FILENO, job);
  ::close(ready[0]);
  [[maybe_unused]] const ssize_t n = ::write(ready[1], "g", 1);
  for (;;) {
    int status = 0;
    if (::waitpid(job, &status, WUNTRACED) < 0) ::_exit(127);
    const char* mode = mode_name(STDIN_FILENO);
    if (WIFSTOPPED(status)) {
      ::dprintf(STDOUT_FILENO, "\n[job stopped; terminal in %s]\n", mode);
      continue;
    }
    ::dprintf(STDOUT_FILENO, "\n[job ended; terminal in %s]\n", mode);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

}  // namespace

Terminal::Terminal(const std::vector<std::string>& argv, unsigned columns, unsigned rows,
                   const std::vector<std::string>& env, bool as_job) {
  winsize size{};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = static_cast<unsigned short>(rows);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int user_side = -1;  // as forkpty(), with the terminal's first mode read before the program can change it
  if (::openpty(&fd_, &user_side, nullptr, nullptr, &size) != 0) throw std::runtime_error("openpty failed");
  if (::tcgetattr(user_side, &first_mode_) != 0) throw std::runtime_error("tcgetattr on the pty failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::close(fd_);
    if (::login_tty(user_side) != 0) ::_exit(127);
    ::setenv("NO_COLOR", "1", 1);
    ::unsetenv("COLUMNS");  // the terminal's size, not the test's environment, lays the output out
    ::unsetenv("LINES");
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    if (as_job) run_as_job(args.data());
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(user_side);
}

Terminal::~Terminal() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) ::close(fd_);
}

bool Terminal::read_some(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return true;
  char buf[8192];
  const ssize_t n = ::read(fd_, buf, sizeof buf);
  if (n <= 0) return false;  // EIO: the program ended and closed the pty
  for (ssize_t k = 0; k < n; ++k)
    if (buf[k] != '\r' || k + 1 >= n || buf[k + 1] != '\n') screen_ += buf[k];
  return true;
}

int Terminal::expect_any(const std::vector<std::string>& texts, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    size_t best = std::string::npos;
    int which = -1;
    for (size_t k = 0; k < texts.size(); ++k)
      if (const size_t at = screen_.find(texts[k], from_); at < best) best = at, which = static_cast<int>(k);
    if (which >= 0) {
      from_ = best + texts[static_cast<size_t>(which)].size();
      return which;
    }
    if (std::chrono::steady_clock::now() > end || !read_some(100)) return -1;
  }
}

bool Terminal::expect(const std::string& text, double timeout_s) {
  return expect_any({text}, timeout_s) == 0;
}

void Terminal::type(const std::string& keys) {
  if (::write(fd_, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size()))
    throw std::runtime_error("cannot type on the pty");
}

bool Terminal::line_mode() const {
  return std::string(mode_name(fd_)) == "line mode";  // Linux: the master reports the terminal's mode
}

termios Terminal::mode() const {
  termios t{};
  if (::tcgetattr(fd_, &t) != 0) throw std::runtime_error("tcgetattr on the pty failed");
  return t;
}

bool Terminal::awaits_key() const {
  for (int k = 0; k < 200; ++k) {
    if (!(mode().c_lflag & ICANON)) return true;
    ::usleep(10000);
  }
  return false;
}

void Terminal::signal_foreground(int signo) {
  const pid_t group = ::tcgetpgrp(fd_);
  if (group <= 0 || ::kill(-group, signo) != 0) throw std::runtime_error("cannot signal the foreground");
}

void Terminal::resize(unsigned columns, unsigned rows) {
  winsize size{};
  size.ws_col = static_cast<unsigned short>(columns);
  size.ws_row = static_cast<unsigned short>(rows);
  if (::ioctl(fd_, TIOCSWINSZ, &size) != 0) throw std::runtime_error("TIOCSWINSZ failed");
}

int Terminal::wait_exit(double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end && read_some(100)) {
  }
  while (!exited_) {  // the pty closes as the program ends: it may take a moment more to be reaped
    if (::waitpid(pid_, &status_, WNOHANG) == pid_)
      exited_ = true;
    else if (std::chrono::steady_clock::now() > end)
      return -1;
    else
      ::usleep(10000);
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lines;
}

size_t glyphs(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace test_support
