// Child processes, the one way this project starts them: the runner's labs (runner/lab_process.h), the
// exercises' build and the learner's executable (runner/exercise.h) and lab 13's ranks (lab/ranks.h). No
// LibTorch: a library of its own, linked by the runner and the lab framework.
//
// A child runs argv with its standard streams where asked (this process's, /dev/null, a file, or a pipe
// this process reads), with environment variables of its own on top of this process's, in a process group
// of its own (so the terminal's Ctrl-C reaches this process alone, which decides what the child gets), and
// dies with this process (PR_SET_PDEATHSIG). It is always exec'd, never a bare fork(): the thread pools of
// a process with LibTorch do not survive fork(). wait_for() watches one child or several at once until they
// end, with a deadline, passing on the signals that would stop this process, and says how each ended.
// Whatever a child leaves in its group when it exits is killed before it is reaped (its group id cannot
// be reused until then): no grandchild outlives it. One wait_for() at a time in a process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lab {

// Where one of a child's standard streams goes: this process's own, /dev/null, a file, or (stdout and
// stderr) a pipe this process reads into Child::out() and Child::err() while it waits.
struct Stream {
  enum class Kind { Inherit, Null, File, Capture };
  Kind kind = Kind::Null;
  std::string path;        // File: read (stdin), or created or truncated with mode 0644 (stdout, stderr)
  size_t limit = 0;        // Capture: how much is kept (0: all)
  bool keep_tail = false;  // Capture: past `limit`, the last `limit` bytes; otherwise the first limit + 1,
                           // so that the reader sees there was more than it takes

  static Stream inherit() { return {Kind::Inherit}; }
  static Stream null() { return {Kind::Null}; }
  static Stream file(std::string path) { return {Kind::File, std::move(path)}; }
  static Stream capture(size_t limit = 0, bool keep_tail = false) {
    return {Kind::Capture, "", limit, keep_tail};
  }
};

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0]: a path (with a '/'), or a program looked up in PATH
  std::vector<std::string> env;   // "NAME=value": set, or replaced, on top of this process's environment
  Stream in = Stream::null(), out = Stream::inherit(), err = Stream::inherit();
  int death_signal = SIGKILL;  // what the child gets when this process dies first (0: nothing)
  // Descriptors handed on: {one of this process's, the number the child gets it as (above 2)}. Nothing
  // else this process opened reaches the child (everything here is close-on-exec).
  std::vector<std::pair<int, int>> pass_fds;
};

// How a child ended, or how far it is.
struct ChildStatus {
  bool ended = false;      // it has been reaped
  int exit_code = -1;      // once it exited by itself (-1 when a signal ended it)
  int term_signal = 0;     // the signal that ended it
  int exec_errno = 0;      // it never ran: why exec failed (ENOENT: no such program); exit code 127
  bool timed_out = false;  // the deadline passed: its group was killed
  int stop_signal = 0;     // the signal this process passed on to its group (forwarded or asked by `stop`)
  bool paused = false;     // stopped (SIGSTOP, SIGTSTP) and not yet continued, while it runs
  // As a shell says it: the exit code, 128 + N when signal N ended it, 127 when it never ran.
  int code() const { return exec_errno ? 127 : term_signal ? 128 + term_signal : exit_code; }
};

// A child that could not be started (no pipe, no fork, a redirect file that does not open): one line.
struct SpawnError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Child {
 public:
  // Starts it; SpawnError when that cannot be done. A program that cannot be exec'd is no error here: it
  // has ended at once, with status().exec_errno set.
  explicit Child(const ChildSpec& spec);
  // One still running is killed with its group (SIGKILL) and reaped: no child outlives its Child.
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;

  pid_t pid() const { return pid_; }  // also its process group's id
  const ChildStatus& status() const { return status_; }
  // What it wrote to a Capture stream, so far (the limit applied).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Sends `signo` to its whole group while it runs (a paused child too).
  void signal(int signo);
  // One look, without waiting: reads what it wrote, notes a pause or a continue, and reaps it once it has
  // exited, killing what is left of its group first. True once it has ended.
  bool poll();

 private:
  friend class ChildWaiter;  // child_process.cpp: wait_for() notes a deadline or a signal passed on
  void read_pipes(bool all = false);
  void reap(int wait_status);
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  Stream out_spec_, err_spec_;
  std::string out_, err_;
  ChildStatus status_;
};

// Which of SIGINT, SIGTERM and SIGHUP that reach this process during wait_for() go on to the children's
// groups.
enum class Forward {
  All,        // every one; a handler the program had for it is still called (the watch's "stop" flag)
  Unhandled,  // only those the program has no handler of its own for (it decides the rest, by `stop`)
  None,       // none: the program's handler decides, and `stop` says what the children get
};

struct WaitOptions {
  // From the call on: past it, every child still running is killed with its group (status().timed_out).
  std::optional<std::chrono::milliseconds> deadline;
  Forward forward = Forward::All;
  // A forwarded signal whose action in this process was the default one (ending it) ends this process
  // as it would have, once the children are reaped: raised again, so the exit status says so. Off: wait_for()
  // returns WaitEnd::Signalled and the caller decides (lab 13 prints a line and exits 128 + N).
  bool reraise = true;
  // Asked on every round: a signal to send to every child's group now (0: none yet). Sent once.
  std::function<int()> stop;
  // After the first signal sent on, this long for the children to end before their groups get SIGKILL.
  std::chrono::milliseconds grace{3000};
  // Called on every round, after the children were looked at; false ends the wait at once, the children
  // left as they are (to be judged, then killed by their destructors). Once a signal has gone on or the
  // deadline has passed, the wait goes on until the children have ended, whatever tick says.
  std::function<bool()> tick;
  std::chrono::milliseconds interval{50};  // the longest a round waits for output or an exit
};

enum class WaitEnd {
  Ended,      // every child ended by itself
  TimedOut,   // the deadline passed and the children still running then were killed
  Signalled,  // a signal was passed on (forwarded, or asked by `stop`); the children have ended
  Cancelled,  // `tick` said to stop waiting; the children are as they were
};

WaitEnd wait_for(std::vector<Child>& children, const WaitOptions& options = {});
WaitEnd wait_for(Child& child, const WaitOptions& options = {});

// A process that leaves its group (setsid, setpgid) is out of reach of the group kills above, and when its
// parent dies it is handed to init, beyond this process. become_subreaper() has it handed to this process
// instead (PR_SET_CHILD_SUBREAPER, for this process's life), and end_descendants() then kills (SIGKILL)
// and reaps every process below this one, whatever group or session it moved to, round after round until
// none is left (a process forking meanwhile is found in the next round). It returns how many it killed.
// Call it when no Child of this process is running: it reaps whatever child it finds.
void become_subreaper();
int end_descendants();

}  // namespace lab
