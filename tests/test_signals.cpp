// Signals to the real amp-lab: Ctrl-C, SIGTERM and SIGHUP at the prompt, during a lab (the first Ctrl-C
// lets the lab finish, a second stops it now) and right after the start.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "support/cli.h"
#include "support/folder.h"
#include "support/walk.h"

namespace test_signals {

namespace fs = std::filesystem;
using namespace test_support;

// Starts the quiz in the background on a FIFO that never delivers a line, waits until `ready` shows in
// its output, sends `signals` (e.g. "INT" or "INT INT INT"), and returns what it printed and its status
// as bash reports it (128+N for a process killed by signal N, too: the summary tells them apart).
Result signalled(const std::string& args, const std::string& ready, const std::string& signals) {
  const fs::path dir = scratch("signal_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string d = dir.string();
  std::ofstream(dir / "run.sh") << "cd '" << d << "'\nmkfifo in\nexec 3<>in\n"
                                << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " << args
                                << " <in >out 2>err &\n"
                                << "pid=$!\nfor i in $(seq 600); do grep -qs '" << ready
                                << "' out && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done\n"
                                << "for s in " << signals << "; do kill -$s $pid; sleep 0.05; done\n"
                                << "wait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + (dir / "run.sh").string() + "'").c_str()) == 0);
  Result r{std::stoi(slurp(dir / "code")), slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

TEST_CASE("Ctrl-C at the prompt ends the quiz with the summary and exit code 130") {
  const auto r = signalled("quiz --quick --device cpu --only 3", "Your answer", "INT");
  CHECK(has(r.out, "Stopped (interrupted)."));
  CHECK(has(r.out, "Summary"));
  CHECK(r.code == 130);
}

TEST_CASE("SIGTERM and SIGHUP end the quiz like Ctrl-C: summary, then 128 + the signal") {
  const auto term = signalled("quiz --quick --device cpu --only 3", "Your answer", "TERM");
  CHECK(has(term.out, "Stopped (terminated)."));
  CHECK(has(term.out, "Summary"));
  CHECK(term.code == 143);
  const auto hup = signalled("quiz --quick --device cpu --only 3", "Your answer", "HUP");
  CHECK(has(hup.out, "Stopped (hang-up)."));
  CHECK(hup.code == 129);
}

// The quiz with stdin on a FIFO that never delivers a line and the labs of `labs`; once `ready` shows in
// its output and the fake lab has started, sends each of `signals` 300 ms apart. After the first, records
// whether the fake lab (which wrote its pid to labpid) was still running when "stopping after this lab"
// showed on stderr.
struct Stopped {
  Result r;
  bool lab_alive_at_message = false;
  bool lab_left = false;  // the fake lab's process was still there after the walk ended
};
Stopped stop_walk(const FakeLabs& labs, const std::string& args, const std::string& ready,
                  const std::string& signals) {
  Folder dir("amp_lab_cli_stop");
  const std::string d = dir.path.string();
  std::ofstream(dir.path / "run.sh")
      << "cd '" << d << "'\nmkfifo in\nexec 3<>in\nexport " << labs.env() << " LABPID='" << d << "/labpid'\n"
      << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " << args << " <in >out 2>err &\n"
      << "pid=$!\nfor i in $(seq 600); do grep -qs '" << ready
      << "' out && break; sleep 0.05; done\n"
      // The fake lab has started (a signal before it starts stops the walk at once, with no lab to wait for).
      << "for i in $(seq 600); do [ -s labpid ] && break; sleep 0.05; done\n"
      << "first=1\nfor s in " << signals << "; do kill -$s $pid\n"
      << "  if [ $first = 1 ]; then for i in $(seq 40); do grep -q 'stopping after this lab' err && break; "
         "sleep 0.025; done\n"
      << "    kill -0 $(cat labpid) 2>/dev/null && echo yes > alive; first=0; fi\n"
      << "  sleep 0.3; done\nwait $pid\necho $? > code\n"
      // A zombie (killed, not yet reaped by init) is not left running.
      << "sleep 0.2; grep -qs '^State:[[:space:]]*[RSDTtWPIK]' /proc/$(cat labpid)/status && echo yes > "
         "left\ntrue\n";
  REQUIRE(std::system(("bash '" + d + "/run.sh'").c_str()) == 0);
  return {Result{std::stoi(slurp(dir.path / "code")), slurp(dir.path / "out"), slurp(dir.path / "err")},
          fs::exists(dir.path / "alive"), fs::exists(dir.path / "left")};
}

TEST_CASE(
    "the first Ctrl-C during a lab says at once that the walk stops after it, and the lab ends its run "
    "before the summary") {
  FakeLabs labs;
  labs.replace("lab03_number_formats",
               "echo $$ > \"$LABPID\"; sleep 2; exec " + q(labs.real("lab03_number_formats")) + " \"$@\"");
  const auto s = stop_walk(labs, "quiz --quick --device cpu --only 3", "1/1 · lab", "INT");
  CHECK(has(s.r.err, "stopping after this lab (Ctrl-C again to stop now)\n"));
  CHECK(s.lab_alive_at_message);  // said while the lab still ran, not after it
  CHECK(has(s.r.out, "Stopped (interrupted)."));
  const auto checks = nlohmann::json::parse(run("run number-formats --quick --json").out)["checks"].size();
  CHECK(has(s.r.out,
            std::to_string(checks) + "/" + std::to_string(checks) + " pass"));  // the lab finished its run
  CHECK_FALSE(has(s.r.out, "Your answer"));
  CHECK(s.r.code == 130);
}

TEST_CASE(
    "a second Ctrl-C stops the running lab now: reported as interrupted, not failed, and nothing is left "
    "running") {
  FakeLabs labs;
  // A lab that would run for a minute, with a child in its process group.
  labs.replace("lab03_number_formats", "sleep 60 & echo $! > \"$LABPID\"; wait");
  const auto s = stop_walk(labs, "quiz --quick --device cpu --only 3,8", "1/2 · lab", "INT INT");
  CHECK(has(s.r.err, "stopping after this lab (Ctrl-C again to stop now)"));
  CHECK(has(s.r.out, "Interrupted: lab 03 number-formats was stopped (interrupted)"));
  CHECK(has(s.r.out, "Stopped (interrupted)."));
  CHECK(has(s.r.out, "interrupted"));
  CHECK_FALSE(has(s.r.out, "The lab failed"));
  CHECK_FALSE(has(s.r.out, "Q8."));
  CHECK(has(s.r.out, "Lab checks: no lab ran to the end"));
  CHECK(s.r.code == 130);
  CHECK_FALSE(s.lab_left);  // the lab's child went with it
}

TEST_CASE("a signal right after amp-lab quiz starts still ends with the summary and the --json file") {
  Folder dir("amp_lab_cli_early");
  const std::string d = dir.path.string(), bin = AMP_LAB_BINARY_DIR "/bin/amp-lab";
  // As soon as the process is amp-lab (exec done), 50 ms later: SIGTERM.
  std::ofstream(dir.path / "run.sh") << "cd '" << d << "'\n'" << bin
                                     << "' quiz --quick --device cpu --only 3,8 "
                                     << "--json walk.json </dev/null >out 2>err &\npid=$!\n"
                                     << "until [ \"$(readlink /proc/$pid/exe)\" = '" << bin
                                     << "' ]; do :; done\n"
                                     << "sleep 0.05; kill -TERM $pid\nwait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + d + "/run.sh'").c_str()) == 0);
  CHECK(std::stoi(slurp(dir.path / "code")) == 143);
  CHECK(has(slurp(dir.path / "out"), "Summary"));
  REQUIRE(fs::exists(dir.path / "walk.json"));
  const auto j = nlohmann::json::parse(slurp(dir.path / "walk.json"));
  CHECK(j["completed"] == false);
}

}  // namespace test_signals
