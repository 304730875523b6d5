// Child processes (src/lab/child_process.h): no LibTorch. Exit codes and signals reported, an exec that
// fails said so, streams where asked, a deadline that kills the whole group (grandchildren too), signals
// that reach this process passed on as asked. What needs a signal sent to the waiting process runs in a
// forked copy of the test, with the default actions back (doctest handles SIGINT and SIGTERM itself).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lab/child_process.h"
#include "support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using lab::Child;
using lab::Stream;
using lab::WaitEnd;

struct Folder : test_support::TempFolder {
  Folder() : TempFolder("child") {}
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `sh -c script`, its stderr (the shell's "Terminated" for a child it saw killed) on /dev/null.
lab::ChildSpec sh(const std::string& script) {
  return {.argv = {"/bin/sh", "-c", script}, .err = Stream::null()};
}

// Waits up to 5 s for `path` to hold a line; returns it.
std::string await_line(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    const std::string text = slurp(path);
    if (!text.empty() && text.back() == '\n') return text.substr(0, text.size() - 1);
    std::this_thread::sleep_for(10ms);
  }
  return "";
}

// A wait's tick that writes "waiting" to `path` on its first round, when the wait's signal handlers are in
// place: a signal sent before that would meet the program's own handling (or none) and never reach the child.
std::function<bool()> say_waiting(const std::string& path) {
  return [path, said = false]() mutable {
    if (!said) std::ofstream(path) << "waiting\n", said = true;
    return true;
  };
}

// Whether process `pid` is gone (or a zombie no one runs) within 2 s.
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Runs `body` in a forked copy of this process with SIGINT, SIGTERM and SIGHUP at their default actions;
// `body` returns the copy's exit code. Meanwhile `outside` runs here with the copy's pid. The wait status.
template <class Body, class Outside>
int in_copy(Body body, Outside outside) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, SIG_DFL);
    ::_exit(body());
  }
  outside(pid);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("exit code, captured output and the child's own environment variables are reported") {
  ::setenv("AMP_LAB_CHILD_TEST_KEPT", "kept", 1);
  ::setenv("AMP_LAB_CHILD_TEST_SET", "old", 1);
  auto spec =
      sh("printf '%s %s' \"$AMP_LAB_CHILD_TEST_KEPT\" \"$AMP_LAB_CHILD_TEST_SET\"; echo oops >&2; exit 7");
  spec.env = {"AMP_LAB_CHILD_TEST_SET=new"};
  spec.out = Stream::capture();
  spec.err = Stream::capture();
  Child child(spec);
  CHECK(lab::wait_for(child) == WaitEnd::Ended);
  CHECK(child.status().ended);
  CHECK(child.status().exit_code == 7);
  CHECK(child.status().code() == 7);
  CHECK(child.status().term_signal == 0);
  CHECK(child.out() == "kept new");
  CHECK(child.err() == "oops\n");
}

TEST_CASE("a child ended by a signal is reported by it: the signal, and 128 + N as a shell says") {
  Child child(sh("kill -TERM $$"));
  CHECK(lab::wait_for(child) == WaitEnd::Ended);
  CHECK(child.status().term_signal == SIGTERM);
  CHECK(child.status().exit_code == -1);
  CHECK(child.status().code() == 128 + SIGTERM);
}

TEST_CASE("a program that cannot be exec'd is reported at once with its errno and code 127") {
  Folder dir;
  std::ofstream(dir.file("not-executable")) << "#!/bin/sh\n";
  struct Case {
    std::string program;
    int error;
  };
  for (const Case& c : {Case{dir.file("missing"), ENOENT}, Case{"amp-lab-no-such-program", ENOENT},
                        Case{dir.file("not-executable"), EACCES}}) {
    CAPTURE(c.program);
    Child child({.argv = {c.program}});
    CHECK(child.status().ended);  // nothing to wait for
    CHECK(child.status().exec_errno == c.error);
    CHECK(child.status().code() == 127);
    CHECK(lab::wait_for(child) == WaitEnd::Ended);
  }
  CHECK_THROWS_AS(Child({.argv = {}}), lab::SpawnError);
}

TEST_CASE("streams go where asked: stdin from a file, stdout into a file, stderr to /dev/null") {
  Folder dir;
  std::ofstream(dir.file("in")) << "from the file\n";
  std::ofstream(dir.file("out")) << "an old, much longer text that is truncated\n";
  Child child({.argv = {"/bin/sh", "-c", "cat; echo gone >&2"},
               .in = Stream::file(dir.file("in")),
               .out = Stream::file(dir.file("out")),
               .err = Stream::null()});
  lab::wait_for(child);
  CHECK(child.status().exit_code == 0);
  CHECK(slurp(dir.file("out")) == "from the file\n");
  CHECK(child.err().empty());
  try {  // a redirect that cannot be made is this process's error, said before anything runs
    Child bad({.argv = {"/bin/true"}, .out = Stream::file(dir.file("none/out"))});
    FAIL("no error");
  } catch (const lab::SpawnError& e) {
    CHECK(std::string(e.what()) == "cannot open " + dir.file("none/out") + ": No such file or directory");
  }
}

TEST_CASE("captured output past its limit: the first limit + 1 bytes, or the last limit bytes") {
  Child child(
      {.argv = {"/bin/sh", "-c", "yes 0123456789 | head -c 200000; yes abcdefghij | head -c 200000 >&2"},
       .out = Stream::capture(1000),
       .err = Stream::capture(1000, /*keep_tail=*/true)});
  lab::wait_for(child);
  std::string out, err;  // what the two printed in full
  while (out.size() < 200000) out += "0123456789\n", err += "abcdefghij\n";
  out.resize(200000), err.resize(200000);
  CHECK(child.out() == out.substr(0, 1001));
  CHECK(child.err() == err.substr(err.size() - 1000));
}

TEST_CASE("the deadline kills the child's whole group, grandchildren too, and says it timed out") {
  Folder dir;
  const auto start = std::chrono::steady_clock::now();
  Child child(sh("sleep 60 & echo $! > '" + dir.file("grandchild") + "'; sleep 60"));
  const std::string grandchild = await_line(dir.file("grandchild"));
  REQUIRE_FALSE(grandchild.empty());
  CHECK(lab::wait_for(child, {.deadline = 300ms}) == WaitEnd::TimedOut);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(child.status().timed_out);
  CHECK(child.status().term_signal == SIGKILL);
  CHECK(gone(std::stoi(grandchild)));
}

TEST_CASE("what a child leaves running in its group when it exits is killed before it is reaped") {
  Folder dir;
  Child child(sh("sleep 60 & echo $! > '" + dir.file("grandchild") + "'; exit 4"));
  CHECK(lab::wait_for(child, {.deadline = 20s}) == WaitEnd::Ended);
  CHECK(child.status().exit_code == 4);
  const std::string grandchild = await_line(dir.file("grandchild"));
  REQUIRE_FALSE(grandchild.empty());
  CHECK(gone(std::stoi(grandchild)));
}

TEST_CASE("several children at once, each with its own variables, each reported") {
  std::vector<Child> children;
  for (int rank = 0; rank < 3; ++rank) {
    auto spec = sh("sleep 0.$RANK; echo rank $RANK; exit $RANK");
    spec.env = {"RANK=" + std::to_string(rank)};
    spec.out = Stream::capture();
    children.emplace_back(spec);
  }
  CHECK(lab::wait_for(children, {.deadline = 20s}) == WaitEnd::Ended);
  for (int rank = 0; rank < 3; ++rank) {
    CAPTURE(rank);
    CHECK(children[rank].status().exit_code == rank);
    CHECK(children[rank].out() == "rank " + std::to_string(rank) + "\n");
  }
}

TEST_CASE("stop's signal goes to the group once, and a child that ignores it gets SIGKILL after the grace") {
  Folder dir;
  Child child(sh("trap '' TERM; echo ready > '" + dir.file("ready") + "'; sleep 60"));
  const auto start = std::chrono::steady_clock::now();
  int asked = 0;
  auto stop = [&] {
    ++asked;
    return fs::exists(dir.file("ready")) ? SIGTERM : 0;
  };
  const WaitEnd end = lab::wait_for(child, {.stop = stop, .grace = 300ms});
  CHECK(end == WaitEnd::Signalled);
  CHECK(child.status().stop_signal == SIGTERM);
  CHECK(child.status().term_signal == SIGKILL);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(asked >= 1);
}

TEST_CASE("once a signal has gone on, tick cannot end the wait: it ends Signalled, the child reaped") {
  Folder dir;
  Child child(sh("echo ready > '" + dir.file("ready") + "'; sleep 60"));
  const WaitEnd end =
      lab::wait_for(child, {.stop = [&] { return fs::exists(dir.file("ready")) ? SIGTERM : 0; },
                            .tick = [&] { return child.status().stop_signal == 0; }});
  CHECK(end == WaitEnd::Signalled);
  CHECK(child.status().ended);
  CHECK(child.status().term_signal == SIGTERM);
}

TEST_CASE("tick can end the wait with the children as they are, and the destructor then kills them") {
  pid_t pid = 0;
  {
    Child child(sh("sleep 60"));
    pid = child.pid();
    int rounds = 0;
    CHECK(lab::wait_for(child, {.tick = [&] { return ++rounds < 3; }, .interval = 10ms}) ==
          WaitEnd::Cancelled);
    CHECK_FALSE(child.status().ended);
    CHECK(::kill(pid, 0) == 0);
  }
  CHECK(gone(pid));
}

TEST_CASE("a paused child is seen as paused, and runs on when continued") {
  Child child(sh("kill -STOP $$; exit 3"));
  bool seen_paused = false;
  lab::wait_for(child, {.deadline = 20s, .tick = [&] {
                          if (child.status().paused && !seen_paused) {
                            seen_paused = true;
                            child.signal(SIGCONT);
                          }
                          return true;
                        }});
  CHECK(seen_paused);
  CHECK(child.status().exit_code == 3);
}

TEST_CASE("a Ctrl-C this process has no handler for goes on to the child, then ends this process as well") {
  Folder dir;
  const std::string ready = dir.file("ready"), marker = dir.file("marker"), waiting = dir.file("waiting");
  const int status = in_copy(
      [&] {
        Child child(sh("trap 'echo got INT > \"" + marker + "\"; exit 5' INT; echo ready > '" + ready +
                       "'; while :; do sleep 0.05; done"));
        lab::wait_for(child, {.deadline = 30s, .tick = say_waiting(waiting)});
        return 1;  // not reached: the signal is raised again once the child has ended
      },
      [&](pid_t copy) {
        REQUIRE(await_line(ready) == "ready");
        REQUIRE(await_line(waiting) == "waiting");
        ::kill(copy, SIGINT);  // to the waiting process alone, as a `kill` does: not to the child's group
      });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(slurp(marker) == "got INT\n");
}

namespace {
std::atomic<int> g_program_saw{0};
void program_handler(int signo) {
  g_program_saw = signo;
}
}  // namespace

TEST_CASE("with a handler of the program's own, Forward::All passes the signal on and still calls it") {
  Folder dir;
  const std::string ready = dir.file("ready"), waiting = dir.file("waiting");
  const int status = in_copy(
      [&] {
        std::signal(SIGTERM, program_handler);
        Child child(sh("trap 'exit 6' TERM; echo ready > '" + ready + "'; while :; do sleep 0.05; done"));
        const WaitEnd end = lab::wait_for(child, {.deadline = 30s, .tick = say_waiting(waiting)});
        const bool ok = end == WaitEnd::Signalled && g_program_saw == SIGTERM &&
                        child.status().stop_signal == SIGTERM && child.status().exit_code == 6;
        return ok ? 0 : 1;
      },
      [&](pid_t copy) {
        REQUIRE(await_line(ready) == "ready");
        REQUIRE(await_line(waiting) == "waiting");
        ::kill(copy, SIGTERM);
      });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("Forward::Unhandled leaves a signal the program handles to the program, and the child runs on") {
  Folder dir;
  const std::string ready = dir.file("ready"), marker = dir.file("marker");
  const int status = in_copy(
      [&] {
        std::signal(SIGHUP, program_handler);
        Child child(sh("trap 'echo got HUP > \"" + marker + "\"' HUP; echo ready > '" + ready +
                       "'; while :; do sleep 0.05; done"));
        int after = 0;  // rounds since the program's handler ran
        const WaitEnd end =
            lab::wait_for(child, {.deadline = 30s, .forward = lab::Forward::Unhandled, .tick = [&] {
                                    return g_program_saw == 0 || ++after < 10;
                                  }});
        return end == WaitEnd::Cancelled && !child.status().ended && child.status().stop_signal == 0 ? 0 : 1;
      },
      [&](pid_t copy) {
        REQUIRE(await_line(ready) == "ready");
        ::kill(copy, SIGHUP);
      });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("with reraise off, a forwarded signal is reported, not raised: the caller decides") {
  Folder dir;
  const std::string ready = dir.file("ready"), waiting = dir.file("waiting");
  const int status = in_copy(
      [&] {
        Child child(sh("echo ready > '" + ready + "'; while :; do sleep 0.05; done"));
        const WaitEnd end =
            lab::wait_for(child, {.deadline = 30s, .reraise = false, .tick = say_waiting(waiting)});
        return end == WaitEnd::Signalled && child.status().term_signal == SIGHUP ? 0 : 1;
      },
      [&](pid_t copy) {
        REQUIRE(await_line(ready) == "ready");
        REQUIRE(await_line(waiting) == "waiting");
        ::kill(copy, SIGHUP);
      });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a descriptor passed on reaches the child under the number asked, and only under it") {
  const int made = ::memfd_create("report", MFD_CLOEXEC);
  REQUIRE(made >= 0);
  const int memfd = ::fcntl(made, F_DUPFD_CLOEXEC, 40);  // a number no child's own descriptor takes
  ::close(made);
  REQUIRE(memfd >= 40);
  Child child({.argv = {"/bin/sh", "-c", "echo report >&5; ls /proc/self/fd"},
               .out = Stream::capture(),
               .pass_fds = {{memfd, 5}}});
  CHECK(lab::wait_for(child, {.deadline = 20s}) == WaitEnd::Ended);
  CHECK(child.status().exit_code == 0);
  char text[16] = {};
  CHECK(::pread(memfd, text, sizeof text - 1, 0) == 7);
  CHECK(std::string(text) == "report\n");
  // 5, and neither the descriptor passed on under its own number nor the copy made to pass it.
  const std::string fds = "\n" + child.out();
  CHECK(fds.find("\n5\n") != std::string::npos);
  CHECK(fds.find("\n" + std::to_string(memfd) + "\n") == std::string::npos);
  CHECK(fds.find("\n6\n") == std::string::npos);
  ::close(memfd);
  CHECK_THROWS_AS(Child({.argv = {"/bin/true"}, .pass_fds = {{0, 1}}}), lab::SpawnError);
}

TEST_CASE("end_descendants kills what left the child's group or session, and what its parent orphaned") {
  Folder dir;
  lab::become_subreaper();
  // A process in a session of its own, and one orphaned by a subshell that ended (handed to this process),
  // both outliving the child that started them and the kill of its group.
  Child child(sh("setsid sleep 60 & echo $! > '" + dir.file("session") + "'; (sleep 61 & echo $! > '" +
                 dir.file("orphan") + "'); exit 0"));
  CHECK(lab::wait_for(child, {.deadline = 20s}) == WaitEnd::Ended);
  const std::string session = await_line(dir.file("session")), orphan = await_line(dir.file("orphan"));
  REQUIRE_FALSE(session.empty());
  REQUIRE_FALSE(orphan.empty());
  CHECK_FALSE(gone(std::stoi(session)));  // the group kill did not reach it
  const auto start = std::chrono::steady_clock::now();
  CHECK(lab::end_descendants() >= 1);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(gone(std::stoi(session)));
  CHECK(gone(std::stoi(orphan)));
  CHECK(lab::end_descendants() == 0);  // nothing is left to kill
}
