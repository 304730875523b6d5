// Lab 06 (amp-api), beyond what tests/test_labs.cpp holds every lab to: the three precisions run whatever
// --dtype says, the flip drops exactly the fp16 resume, and the tiny-gradient batch needs the scale. Its
// executable, run as a process: a checkpoint that does not fit ends it with one line, its scratch folder is
// private, and neither a planted name nor a signal leaves anything behind, alone or under amp-lab.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>

#include "amp_lab_paths.h"
#include "lab/libtorch.h"
#include "lab_test_support.h"
#include "support/cli.h"
#include "support/folder.h"

namespace lab06_amp_api_test {

TEST_CASE("the lab runs all three precisions whatever --dtype says, with the same results") {
  const auto bf16 = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  const auto fp16 = run_quick_lab("amp-api", torch::kHalf, /*flip=*/false);
  for (const char* key : {"final_loss_fp32", "loss_spread", "skipped_steps_fp16", "final_scale_fp16"}) {
    CAPTURE(key);
    CHECK(bf16.value(key) == fp16.value(key));
  }
}

TEST_CASE("the fp16 gap to fp32 is the skipped steps: fp32 skipping the same steps lands on fp16's loss") {
  const auto r = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  REQUIRE(r.value("skipped_steps_fp16") > 0);  // the scaler had steps to skip
  CHECK(r.value("fp16_gap_same_skips") < r.value("loss_spread"));
  CHECK(r.value("fp16_gap_same_skips") < 1.0);  // percent
}

TEST_CASE("dropping only the scaler's state (flip): fp32 and bf16 still resume bit for bit, fp16 does not") {
  const auto r = run_quick_lab("amp-api", torch::kHalf, /*flip=*/true);
  CHECK(r.value("resumed_identical") == 2);  // fp32 and bf16: their scaler is disabled and has no state
  CHECK(r.value("fp16_resumed_identical") == 0);
  CHECK(check_keyed(r, "resume-bitwise").evidence == "fp32 equal, bf16 equal, fp16 differs");
}

TEST_CASE(
    "on a batch with gradients below fp16's range, fp16 loses the steps without a scale, not with one") {
  const auto r = run_quick_lab("amp-api", torch::kHalf, /*flip=*/false);
  CHECK(r.value("probe_off_fp16_unscaled") >= 50.0);  // percent of the weights, the lab's own unscaled step
  for (const char* key : {"probe_off_fp32", "probe_off_bf16", "probe_off_fp16"}) {
    CAPTURE(key);
    CHECK(r.value(key) <= 1.0);
  }
  CHECK(r.value("fp16_scaler_enabled") == 1);
  // The logits' dtype, recorded by the MLP's last module: what autocast did in each run.
  CHECK(check_keyed(r, "autocast-dtype").evidence == "fp32: fp32; bf16: bf16; fp16: fp16");
  CHECK(check_keyed(r, "skips-exactly-overflows").passed);
}

TEST_CASE("a second unscale_ before update() raises Python's message") {
  const auto r = run_quick_lab("amp-api", torch::kBFloat16, /*flip=*/false);
  CHECK(r.value("second_unscale_refused") == 1);
  CHECK(
      r.render_text().find("unscale_() has already been called on this optimizer since the last update().") !=
      std::string::npos);
}

// ---- The lab's executable: its checkpoint on a full disk, its scratch folder, signals ---------------------

namespace {

namespace fs = std::filesystem;
using test_support::count;
using test_support::Folder;
using test_support::FullDisk;
using test_support::has;
using test_support::Result;
using test_support::scratch;
using test_support::sh;
using test_support::slurp;

// Runs lab 06 in quick mode through bash with `prefix` before it (environment, ulimit), stdout discarded.
Result lab06(const std::string& prefix) {
  const fs::path err = scratch("lab06_" + std::to_string(::getpid()) + ".err");
  const int code =
      sh(prefix + " NO_COLOR=1 exec \"" AMP_LAB_BINARY_DIR "/bin/lab06_amp_api\" --quick > /dev/null 2> " +
         err.string());
  Result r{code, "", slurp(err)};
  fs::remove(err);
  return r;
}

// Runs `command` (a lab or amp-lab with its arguments) under bash with TMPDIR=`tmp`, so its pid is the
// shell's: `plant` may use $$ to put something at a name derived from it first. With `signal` set ("TERM",
// or several: "INT INT INT"), waits until the lab's scratch folder shows in `tmp`, records its mode, and
// sends the signals 50 ms apart. At most 120 s.
struct Watched {
  int code = -1;
  std::string out, err, seen_mode;  // seen_mode: the scratch folder's permission bits while the lab ran
};
Watched watch(const fs::path& tmp, const std::string& command, const std::string& plant = "",
              const std::string& signal = "") {
  Folder work("amp_lab_cli_watch");
  const std::string w = work.path.string(), t = tmp.string();
  std::ofstream(work.path / "lab.sh") << plant << "\necho $$ > '" << w << "/pid'\nNO_COLOR=1 exec " << command
                                      << " > '" << w << "/out' 2> '" << w << "/err'\n";
  std::ofstream run_sh(work.path / "run.sh");
  // set -m: without job control bash starts background commands with SIGINT ignored, which the lab inherits.
  run_sh << "set -m\nexport TMPDIR='" << t << "'\ntimeout -s KILL 120 bash '" << w << "/lab.sh' &\npid=$!\n";
  if (!signal.empty())
    run_sh << "until [ -s '" << w << "/pid' ]; do sleep 0.01; done\nlab=$(cat '" << w << "/pid')\n"
           << "while kill -0 $lab 2>/dev/null; do\n"
           << "  d=$(find '" << t << "' -mindepth 1 -maxdepth 1 -type d -name 'amp_lab_06_*' | head -1)\n"
           << "  if [ -n \"$d\" ]; then stat -c %a \"$d\" > '" << w << "/mode'\n"
           << "    for s in " << signal << "; do kill -$s $lab; sleep 0.05; done; break; fi\n"
           << "  sleep 0.005\ndone\n";
  run_sh << "wait $pid\necho $? > '" << w << "/code'\n";
  run_sh.close();
  // bash's job-control notes ("Terminated ...") go to a file, not the test's output.
  REQUIRE(std::system(("bash '" + w + "/run.sh' 2> '" + w + "/jobs'").c_str()) == 0);
  Watched r{std::stoi(slurp(work.path / "code")), slurp(work.path / "out"), slurp(work.path / "err"),
            slurp(work.path / "mode")};
  while (!r.seen_mode.empty() && r.seen_mode.back() == '\n') r.seen_mode.pop_back();
  return r;
}

const std::string kLab06 = "\"" AMP_LAB_BINARY_DIR "/bin/lab06_amp_api\"";

}  // namespace

TEST_CASE("a full disk under lab 06's checkpoint ends the lab with exit 3 and one line naming the cause") {
  FullDisk full;
  if (!full.mounted) {
    std::cout << "SKIPPED: " << full.why_not << "; the file-size-limit test covers the same path\n";
    return;
  }
  const auto r = lab06("TMPDIR=" + full.folder.path.string());
  CHECK(r.code == 3);
  CHECK(count(r.err, "\n") == 1);
  CHECK(has(r.err,
            "lab06_amp_api: lab failed: amp::checkpoint: cannot write " + full.folder.path.string() + "/"));
  CHECK(has(r.err, ": No space left on device\n"));
  CHECK_FALSE(has(r.err, "frame #"));
  CHECK(full.folder.entries().empty());  // no checkpoint, no temporary file, no scratch folder
}

TEST_CASE("a file-size limit under lab 06's checkpoint also ends it with exit 3 and one line") {
  // ulimit -f needs no privilege. SIGXFSZ keeps its default action here (killing the lab, exit 153, its
  // scratch folder left behind, until the lab ignored it while it writes): the write fails with EFBIG.
  Folder tmp("amp_lab_cli_fsize");
  const auto r = lab06("ulimit -f 16; TMPDIR=" + tmp.path.string());
  CHECK(r.code == 3);
  CHECK(count(r.err, "\n") == 1);
  CHECK(has(r.err, "lab06_amp_api: lab failed: amp::checkpoint: cannot write " + tmp.path.string() + "/"));
  CHECK(has(r.err, ": File too large\n"));
  CHECK(tmp.entries().empty());
}

TEST_CASE(
    "lab 06 leaves a symlink planted at its old predictable scratch name, and the file it points to, "
    "untouched") {
  Folder tmp("amp_lab_cli_symlink"), elsewhere("amp_lab_cli_victim");
  const fs::path victim = elsewhere.path / "precious.txt";
  std::ofstream(victim) << "precious";
  // The name lab 06 used before: amp_lab_06_<pid>.pt in TMPDIR; exec keeps the shell's pid for the lab.
  const auto r =
      watch(tmp.path, kLab06 + " --quick", "ln -s '" + victim.string() + "' \"$TMPDIR/amp_lab_06_$$.pt\"");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(slurp(victim) == "precious");
  const auto entries = tmp.entries();
  REQUIRE(entries.size() == 1);  // the planted link only: no scratch folder left
  const fs::path link = tmp.path / entries.front();
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(fs::read_symlink(link) == victim);
}

TEST_CASE("lab 06 neither opens nor replaces a FIFO planted at its old predictable scratch name") {
  Folder tmp("amp_lab_cli_fifo");
  const auto r = watch(tmp.path, kLab06 + " --quick", "mkfifo \"$TMPDIR/amp_lab_06_$$.pt\"");
  CHECK(r.code == 0);  // 137 would be the 120 s deadline: the lab hung on the FIFO
  CHECK(r.err.empty());
  const auto entries = tmp.entries();
  REQUIRE(entries.size() == 1);
  CHECK(fs::is_fifo(fs::symlink_status(tmp.path / entries.front())));
}

TEST_CASE("lab 06 leaves nothing in TMPDIR after a run, and an empty TMPDIR means /tmp") {
  Folder tmp("amp_lab_cli_clean");
  const auto r = watch(tmp.path, kLab06 + " --quick");
  CHECK(r.code == 0);
  CHECK(tmp.entries().empty());
  const auto empty = lab06("TMPDIR=");
  CHECK(empty.code == 0);
  CHECK(empty.err.empty());
}

TEST_CASE(
    "lab 06 killed by SIGTERM, SIGINT or SIGHUP mid-run removes its private scratch folder and dies by the "
    "signal") {
  for (const auto& [name, number] : {std::pair<std::string, int>{"TERM", 15}, {"INT", 2}, {"HUP", 1}}) {
    CAPTURE(name);
    Folder tmp("amp_lab_cli_signal");
    const auto r = watch(tmp.path, kLab06, "", name);  // default size: long enough to be caught mid-run
    REQUIRE(r.seen_mode == "700");  // the signal came while the scratch folder existed; only we can enter it
    CHECK(r.code == 128 + number);  // ended by the signal itself, as without a handler
    CHECK(tmp.entries().empty());
  }
}

TEST_CASE(
    "under amp-lab, SIGTERM during lab 06 ends the walk with its summary and leaves no scratch folder") {
  Folder tmp("amp_lab_cli_walk");
  const auto r = watch(
      tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "", "TERM");
  REQUIRE(r.seen_mode == "700");
  CHECK(has(r.out, "Stopped (terminated)."));
  CHECK(has(r.out, "Summary"));
  CHECK(r.code == 143);
  CHECK(tmp.entries().empty());
}

TEST_CASE(
    "under amp-lab, a second Ctrl-C during lab 06 stops it now, with the summary, and leaves no scratch "
    "folder") {
  Folder tmp("amp_lab_cli_walk2");
  const auto r =
      watch(tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "",
            "INT INT");
  REQUIRE(r.seen_mode == "700");
  CHECK(has(r.err, "stopping after this lab (Ctrl-C again to stop now)"));
  CHECK(has(r.out, "Stopped (interrupted)."));
  CHECK(has(r.out, "interrupted"));
  CHECK_FALSE(has(r.out, "The lab failed"));
  CHECK(r.code == 130);
  CHECK(tmp.entries().empty());
}

}  // namespace lab06_amp_api_test
