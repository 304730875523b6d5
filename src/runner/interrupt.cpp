#include "runner/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <initializer_list>

#include "runner/terminal_keys.h"

namespace runner {
namespace {

volatile std::sig_atomic_t g_first = 0;      // the first signal's number, 0 while none came
volatile std::sig_atomic_t g_count = 0;      // how many came
volatile std::sig_atomic_t g_stop_now = 0;   // the running lab is to be stopped now
volatile std::sig_atomic_t g_lab_group = 0;  // the running lab's process group, 0 while none runs
volatile std::sig_atomic_t g_progress_shown = 0;
const char* volatile g_remove_on_abort = nullptr;
volatile std::sig_atomic_t g_resized = 0;

void on_resize(int) {
  g_resized = 1;
}

void say(const char* text) {
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

void on_signal(int signo) {
  const int saved_errno = errno;
  restore_terminal_mode();  // a key awaited at the terminal: its mode as it was, whatever comes next
  if (!g_first) g_first = signo;
  g_count = g_count + 1;
  if (g_count >= 3) {  // the walk did not end soon enough: end now, as the signal would by default
    if (const char* path = g_remove_on_abort) ::unlink(path);
    if (g_lab_group)
      ::kill(-static_cast<pid_t>(g_lab_group), SIGKILL);  // the lab does not outlive the runner
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
  if (g_progress_shown)
    say("\r                                                                              \r");
  if (signo == SIGINT && g_count == 1 && g_lab_group) {
    say("stopping after this lab (Ctrl-C again to stop now)\n");
  } else {
    if (g_lab_group) say("stopping the lab now\n");
    g_stop_now = 1;
  }
  // No prompt is read after a signal (the walk goes to its summary). A signal that lands after a prompt is
  // printed but before its read() begins interrupts nothing, and the read would then wait for a line that
  // may never come (a pipe held open, an idle terminal): from now on stdin is /dev/null, and that read, or
  // any later one, returns end of input at once. open() and dup2() are async-signal-safe.
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::close(null_fd);
  }
  errno = saved_errno;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read or poll returns, and the walk goes on to its summary
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
  struct sigaction resize{};
  resize.sa_handler = on_resize;
  sigemptyset(&resize.sa_mask);
  resize.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &resize, nullptr);
}

bool take_resize() {
  if (!g_resized) return false;
  g_resized = 0;
  return true;
}

int interrupt_signal() {
  return g_first;
}

const char* interrupt_reason() {
  return g_first == SIGTERM ? "terminated" : g_first == SIGHUP ? "hang-up" : "interrupted";
}

bool stop_lab_now() {
  return g_stop_now != 0;
}
void set_lab_running(int group) {
  g_lab_group = group;
}
void set_progress_shown(bool shown) {
  g_progress_shown = shown ? 1 : 0;
}
void set_remove_on_abort(const char* path) {
  g_remove_on_abort = path;
}

}  // namespace runner
