// One key at a terminal (runner/terminal_keys.h).
#include "runner/terminal_keys.h"

#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <exception>

namespace runner {
namespace terminal_keys {  // named: KeyTerminal::Buffers holds these (an unnamed one would give it internal
                           // types)

// What the signal handlers need: the modes (terminal_keys.h says which holds when), set when a KeyTerminal
// begins.
termios g_original{};                      // the terminal's mode when the KeyTerminal began
termios g_quiet{};                         // between reads: g_original without echo
termios g_raw{};                           // while a key is awaited
volatile std::sig_atomic_t g_active = 0;   // a KeyTerminal lives and has the terminal's mode to restore
volatile std::sig_atomic_t g_set = 0;      // the terminal is (or is being put) in g_quiet or g_raw
volatile std::sig_atomic_t g_waiting = 0;  // a read waits for a key (in raw mode unless stopped)
const char* volatile g_prompt = nullptr;   // the line a read waits at, shown again after fg
volatile size_t g_prompt_size = 0;
constexpr int kTerminal = STDIN_FILENO;  // the keys' terminal
struct sigaction g_stop_action{};        // on_key_wait_stop(), installed while a KeyTerminal lives

bool in_foreground() {
  return ::tcgetpgrp(kTerminal) == ::getpgrp();
}

// The mode the walk wants now, when it is in the foreground; async-signal-safe. In the background the
// terminal is left alone (changing it would stop the walk with SIGTTOU): a read there stops the walk with
// SIGTTIN, and SIGCONT sets the mode once it is brought back.
void set_walk_mode() {
  if (!in_foreground()) return;
  g_set = 1;  // before the change: a signal in between restores the terminal
  ::tcsetattr(kTerminal, TCSANOW, g_waiting ? &g_raw : &g_quiet);
}

// The terminal's mode as it was, when the walk changed it; async-signal-safe. SIGTTOU is blocked meanwhile,
// so that a walk that changed the mode and went to the background in the same instant still restores it
// rather than stopping.
void set_original_mode() {
  if (!g_set) return;
  g_set = 0;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &old);
  ::tcsetattr(kTerminal, TCSANOW, &g_original);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
}

// The signals whose handlers change the terminal's mode, held back while the walk changes it outside a
// handler (and while one of its own handlers runs): a signal in the middle would restore the original mode
// and then see it overwritten.
sigset_t mode_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signo : {SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT}) sigaddset(&set, signo);
  return set;
}

class ModeSignalsHeld {
 public:
  ModeSignalsHeld() {
    const sigset_t held = mode_signals();
    ::sigprocmask(SIG_BLOCK, &held, &old_);
  }
  ~ModeSignalsHeld() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  ModeSignalsHeld(const ModeSignalsHeld&) = delete;
  ModeSignalsHeld& operator=(const ModeSignalsHeld&) = delete;

 private:
  sigset_t old_;
};

// Ctrl-Z (SIGTSTP): the terminal as it was, then stop as the signal would by default; after fg (or bg),
// this handler again, and the walk's mode again when in the foreground.
void on_key_wait_stop(int signo) {
  const int saved_errno = errno;
  if (g_active) set_original_mode();
  struct sigaction stop{};
  stop.sa_handler = SIG_DFL;
  sigemptyset(&stop.sa_mask);
  ::sigaction(signo, &stop, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signo);  // stops here until SIGCONT (an orphaned process group does not stop: it goes on at once)
  ::sigaction(signo, &g_stop_action, nullptr);
  if (g_active) set_walk_mode();
  errno = saved_errno;
}

// SIGCONT: the walk's mode again when it is in the foreground (in the background, a read stops the walk
// with SIGTTIN until fg, and this runs again then), and the prompt again under the shell's lines while a
// read waits. The read goes on (SA_RESTART), and so does any write the stop came in.
void on_key_wait_continue(int) {
  const int saved_errno = errno;
  if (g_active && in_foreground()) {
    set_walk_mode();
    if (const char* prompt = g_prompt; prompt && g_waiting) {
      [[maybe_unused]] const ssize_t n = ::write(STDOUT_FILENO, prompt, g_prompt_size);
    }
  }
  errno = saved_errno;
}

// Standard output that remembers the text after its last line break: the prompt a key is awaited at.
class LineMemory : public std::streambuf {
 public:
  explicit LineMemory(std::streambuf* to) : to_(to) {}
  const std::string& line() const { return line_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    remember(&ch, 1);
    return to_->sputc(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    remember(s, static_cast<size_t>(n));
    return to_->sputn(s, n);
  }
  int sync() override { return to_->pubsync(); }

 private:
  void remember(const char* s, size_t n) {
    const std::string_view text(s, n);
    const size_t last = text.rfind('\n');
    if (last != std::string_view::npos) line_.clear();
    line_.append(text.substr(last == std::string_view::npos ? 0 : last + 1));
    if (line_.size() > 4096) line_.erase(0, line_.size() - 4096);  // a prompt is one line
  }
  std::streambuf* to_;
  std::string line_;
};

// Raw mode for the span of one read; the mode between reads at its end, however it ends. Nothing when the
// KeyTerminal could not read the terminal's mode, or a signal restored it for good.
class RawMode {
 public:
  RawMode() {
    const ModeSignalsHeld held;
    if (!g_active) return;
    g_waiting = 1;
    set_walk_mode();
  }
  ~RawMode() {
    const ModeSignalsHeld held;
    g_waiting = 0;
    if (g_active) set_walk_mode();
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
};

// stdin a reply at a time (KeyTerminal::in()).
class KeyInput : public std::streambuf {
 public:
  KeyInput(std::ostream& echo, const LineMemory& screen) : echo_(echo), screen_(screen) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (ended_ || (pending_.empty() && !read_keys())) {
      ended_ = true;
      return traits_type::eof();
    }
    size_t end = pending_.find_first_of("\n\r\x04");
    if (end == 0 && pending_[0] == '\x04') {  // Ctrl-D, as at the start of a line: end of input
      ended_ = true;
      return traits_type::eof();
    }
    reply_ = pending_.substr(0, end);
    if (end != std::string::npos && pending_[end] == '\r' && end + 1 < pending_.size() &&
        pending_[end + 1] == '\n')
      ++end;  // a terminal that sends both for Enter
    pending_.erase(0, end == std::string::npos || pending_[end] == '\x04' ? reply_.size() : end + 1);
    // The echo the terminal would have given: the visible keys, then the line break of Enter.
    std::string shown;
    for (const char c : reply_)
      if (static_cast<unsigned char>(c) >= 0x20 && c != '\x7f') shown += c;
    echo_ << shown << "\n" << std::flush;
    reply_ += '\n';
    setg(reply_.data(), reply_.data(), reply_.data() + reply_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  // Waits for a key in raw mode, then takes every key typed so far. False at end of input: Ctrl-D, or a
  // signal (the interrupt handler has made stdin /dev/null).
  bool read_keys() {
    echo_.flush();
    g_prompt_size = screen_.line().size();  // unchanged until the read ends
    g_prompt = screen_.line().c_str();
    const RawMode raw;
    char buffer[256];
    const ssize_t n = ::read(kTerminal, buffer, sizeof buffer);  // EINTR: a signal ends the walk
    g_prompt = nullptr;
    if (n <= 0) return false;
    // Ctrl-D typed between reads, in line mode, is kept by the line discipline as a NUL byte marking the
    // line's end, and a raw read hands that byte over: it is end of input, as Ctrl-D is at a prompt.
    std::replace(buffer, buffer + n, '\0', '\x04');
    pending_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  std::ostream& echo_;
  const LineMemory& screen_;
  std::string pending_;  // keys read and not yet part of a reply
  std::string reply_;    // the reply being read, with its line break
  bool ended_ = false;
};

}  // namespace terminal_keys

struct KeyTerminal::Buffers {
  explicit Buffers(std::ostream& screen) : memory(screen.rdbuf()), echo(&memory), keys(echo, memory) {}
  terminal_keys::LineMemory memory;
  std::ostream echo;
  terminal_keys::KeyInput keys;
  struct sigaction old_stop{}, old_continue{};
};

namespace terminal_keys {

std::terminate_handler g_old_terminate = nullptr;  // called after on_terminate() restored the mode

// std::terminate (an exception no one catches) aborts without unwinding: the terminal as it was first.
[[noreturn]] void on_terminate() {
  restore_terminal_mode();
  if (g_old_terminate) g_old_terminate();
  std::abort();
}

}  // namespace terminal_keys

KeyTerminal::KeyTerminal(std::ostream& screen)
    : buffers_(std::make_unique<Buffers>(screen)), in_(&buffers_->keys), out_(&buffers_->memory) {
  using namespace terminal_keys;
  g_stop_action.sa_handler = on_key_wait_stop;
  g_stop_action.sa_mask = mode_signals();
  g_stop_action.sa_flags = SA_RESTART;  // a read or write the stop came in goes on after fg
  ::sigaction(SIGTSTP, &g_stop_action, &buffers_->old_stop);
  struct sigaction resume{};
  resume.sa_handler = on_key_wait_continue;
  resume.sa_mask = mode_signals();
  resume.sa_flags = SA_RESTART;
  ::sigaction(SIGCONT, &resume, &buffers_->old_continue);
  // std::exit (no destructor runs): restored too. Registered once, whatever number of KeyTerminals.
  [[maybe_unused]] static const bool at_exit = std::atexit([] { restore_terminal_mode(); }) == 0;
  g_old_terminate = std::set_terminate(on_terminate);

  const ModeSignalsHeld held;
  if (::tcgetattr(kTerminal, &g_original) != 0) return;  // keys are read with the mode as it is
  g_quiet = g_original;
  g_quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHONL);
  g_raw = g_quiet;
  g_raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | IEXTEN);  // ISIG kept: Ctrl-C, Ctrl-Z
  g_raw.c_cc[VMIN] = 1;
  g_raw.c_cc[VTIME] = 0;
  g_waiting = 0;
  g_active = 1;
  set_walk_mode();
}

KeyTerminal::~KeyTerminal() {
  out_.flush();
  restore_terminal_mode();
  std::set_terminate(terminal_keys::g_old_terminate);
  ::sigaction(SIGTSTP, &buffers_->old_stop, nullptr);
  ::sigaction(SIGCONT, &buffers_->old_continue, nullptr);
}

void restore_terminal_mode() noexcept {
  using namespace terminal_keys;
  const ModeSignalsHeld held;  // sigprocmask: async-signal-safe
  if (!g_active) return;
  g_active = 0;
  g_waiting = 0;
  set_original_mode();
}

}  // namespace runner
