// The runner runs each lab's own executable: a lab that crashes, prints no report, is not built or is
// still being built, and a slow lab's live line on a terminal (labs replaced in a folder of their own).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "amp_lab_paths.h"
#include "support/cli.h"
#include "support/folder.h"
#include "support/process.h"
#include "support/terminal.h"
#include "support/walk.h"

namespace test_lab_runs {

namespace fs = std::filesystem;
using namespace test_support;

test_support::ProcessResult quiz_with(const std::vector<std::string>& env,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv{AMP_LAB_BINARY_DIR "/bin/amp-lab", "quiz", "--no-color"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::run_process(argv, /*timeout_s=*/300, env);
}

TEST_CASE(
    "a lab that crashes, prints no report or is not built costs the walk one line, and the walk goes on") {
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {"kill -SEGV $$",
       "The lab failed: lab 03 number-formats crashed: killed by signal 11 (Segmentation fault)"},
      {"echo 'not a report'", "The lab failed: it printed no readable report"},
      {"echo 'lab03_number_formats: lab failed: out of cheese' >&2; exit 3",
       "The lab failed: out of cheese\n"},
      {"", "The lab failed: lab 03 number-formats is not built here"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.body);
    FakeLabs labs;
    if (c.body.empty())
      fs::remove(labs.folder.path / "lab03_number_formats");
    else
      labs.replace("lab03_number_formats", c.body);
    const auto r = quiz_with(
        {labs.env()}, {"--quick", "--device", "cpu", "--only", "3,8", "--file-order", "--answers", "cd"});
    CHECK(r.code == 3);                              // a lab failed to run
    CHECK(has(squeeze(r.out), squeeze(c.message)));  // wrapped at the width
    CHECK(count(r.out, "The lab failed") == 1);
    CHECK(has(r.out, "Q3. "));           // its question is still asked, without its numbers
    CHECK(has(r.out, "Q8. "));           // and the walk goes on
    CHECK(has(r.out, "verdict: PASS"));  // lab 08's report
    CHECK(has(squeeze(r.out),
              "Lab checks: did NOT all hold: 1 of 1 lab that reported passed; 1 lab failed to run"));
    CHECK(inert(r.out));
  }
}

TEST_CASE(
    "the walk waits for a lab still being built, and a lab whose build failed is a failed lab pointing to "
    "the log") {
  FakeLabs labs;
  fs::remove(labs.folder.path / "lab03_number_formats");  // "built" only when its .ok appears
  Folder status("amp_lab_cli_status");
  const std::string d = status.path.string();
  std::ofstream(status.path / "log") << "/path/to/build-ahead.log\n";
  std::ofstream(status.path / "lab08_autocast_policy.failed") << "/path/to/build-ahead.log\n";
  // A stand-in builder: alive until killed; lab 03's build "ends" after 1.5 s.
  const int code = sh("sleep 60 & echo $! > " + d + "/builder.pid; (sleep 1.5; ln -s " +
                      q(labs.real("lab03_number_formats")) + " " + labs.folder.path.string() +
                      "/lab03_number_formats; touch " + d + "/lab03_number_formats.ok) & " +
                      "NO_COLOR=1 AMP_LAB_BUILD_AHEAD=" + d + " " + labs.env() + " " +
                      q(AMP_LAB_BINARY_DIR "/bin/amp-lab") +
                      " quiz --quick --device cpu --only 3,8 --file-order --answers cd > " + d +
                      "/out 2>&1; " + "rc=$?; kill $(cat " + d + "/builder.pid); exit $rc");
  const std::string out = slurp(status.path / "out");
  CHECK(code == 3);
  CHECK(has(out, "70000"));  // lab 03 ran once built
  CHECK(has(squeeze(out),
            "The lab failed: lab 08 autocast-policy did not build (see /path/to/build-ahead.log)"));
  CHECK(has(out, "Q8. "));
  CHECK_FALSE(has(out, "building lab"));  // no live line into a file
}

TEST_CASE(
    "on a terminal a slow lab shows a live line that is erased before its report, and a pipe never sees it") {
  FakeLabs labs;
  labs.replace("lab03_number_formats", "sleep 1.5; exec " + q(labs.real("lab03_number_formats")) + " \"$@\"");
  Terminal t({AMP_LAB_BINARY_DIR "/bin/amp-lab", "quiz", "--quick", "--device", "cpu", "--only", "3",
              "--file-order", "--answers", "c"},
             /*columns=*/0, /*rows=*/0, {labs.env()});  // a pty whose size is not set, as forkpty leaves it
  REQUIRE(t.expect("running lab 03 number-formats... "));
  REQUIRE(t.expect("Score: 1/1 right"));
  t.wait_exit();
  const std::string& screen = t.screen();
  const size_t live = screen.find("running lab 03 number-formats... ");
  const size_t erased = screen.find("\r          ", live);  // spaces over it, from the line's start
  CHECK(erased != std::string::npos);
  CHECK(erased < screen.find("== bf16 and fp16"));  // before the report
  const auto piped = quiz_with(
      {labs.env()}, {"--quick", "--device", "cpu", "--only", "3", "--file-order", "--answers", "c"});
  CHECK(piped.code == 0);
  CHECK_FALSE(has(piped.out, "running lab"));
  CHECK_FALSE(has(piped.out, "\r"));
}

}  // namespace test_lab_runs
