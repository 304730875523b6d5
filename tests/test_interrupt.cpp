// The runner's signal handler (src/runner/interrupt.cpp), in this process: each test case runs in its own
// process under ctest (doctest_discover_tests), so the signals raised here stay in it.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "runner/interrupt.h"

namespace {

// stdin as a pipe whose writer stays open: a read() on it waits until someone writes.
int stdin_from_idle_pipe() {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::dup2(fds[0], STDIN_FILENO) == STDIN_FILENO);
  ::close(fds[0]);
  return fds[1];
}

// Whether a read() of stdin that starts now returns end of input within `timeout_ms`.
bool stdin_reads_end_of_input(int timeout_ms = 2000) {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  char c = 0;
  return ::read(STDIN_FILENO, &c, 1) == 0;
}

}  // namespace

TEST_CASE("a SIGTERM before the prompt's read begins makes that read end at once, not wait for a line") {
  runner::install_interrupt_handler();
  const int writer = stdin_from_idle_pipe();
  REQUIRE_FALSE(
      stdin_reads_end_of_input(/*timeout_ms=*/200));  // the pipe alone waits: the case the handler must end
  ::raise(SIGTERM);
  CHECK(runner::interrupt_signal() == SIGTERM);
  CHECK(std::string(runner::interrupt_reason()) == "terminated");
  CHECK(stdin_reads_end_of_input());
  ::close(writer);
}

TEST_CASE("a first Ctrl-C while a lab runs lets the lab finish, and no prompt waits after it") {
  runner::install_interrupt_handler();
  const int writer = stdin_from_idle_pipe();
  runner::set_lab_running(/*group=*/0x7fffffff);  // no such group: nothing is signalled by the first Ctrl-C
  ::raise(SIGINT);
  CHECK(runner::interrupt_signal() == SIGINT);
  CHECK_FALSE(runner::stop_lab_now());
  CHECK(stdin_reads_end_of_input());
  runner::set_lab_running(0);
  ::close(writer);
}
