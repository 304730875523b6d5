// What the judge reads from paths the learner controls, and what it hands the compiler
// (src/runner/exercise_files.h, src/lab/regular_file.h): no LibTorch. A FIFO, a device, a symlink to
// /dev/zero and a huge sparse file are refused at once; a file saved with a byte-order mark, or at a path
// with a newline, still compiles. FIFOs and fake device nodes are made in a folder of the test's own.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lab/regular_file.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"
#include "support/temp_folder.h"

namespace {

namespace fs = std::filesystem;

struct Folder : test_support::TempFolder {
  Folder() : TempFolder("exfiles") {}
};

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Whether the C++ compiler accepts `unit` (syntax only: a fraction of a second, no LibTorch).
bool compiles(const Folder& dir, const std::string& unit) {
  const std::string src = dir.file("unit.cpp");
  put(src, unit);
  const std::string cmd = "c++ -fsyntax-only -x c++ '" + src + "' 2>'" + dir.file("unit.err") + "'";
  return std::system(cmd.c_str()) == 0;
}

// Runs `read` and returns its ReadError's message, "" when it read.
template <class F>
std::string refusal(F read) {
  try {
    read();
  } catch (const runner::ExerciseError& e) {
    return e.what();
  } catch (const lab::ReadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a learner's file saved with a UTF-8 byte-order mark compiles, its lines numbered as saved") {
  Folder dir;
  const std::string text = "\xEF\xBB\xBFint main() { return 0; }\n";
  const std::string unit = runner::learner_unit(dir.file("09_gradient_accumulation.cpp"), text);
  CHECK(unit.find("\xEF\xBB\xBF") == std::string::npos);
  CHECK(compiles(dir, unit));
  // The mark anywhere else is the learner's text, kept as it is.
  CHECK(runner::learner_unit("a.cpp", "int x;\n\xEF\xBB\xBF").find("\xEF\xBB\xBF") != std::string::npos);
}

TEST_CASE("a learner's file at a path with a newline, a quote or a backslash compiles") {
  Folder dir;
  for (const std::string path : {"/ws/a\nb.cpp", "/ws/\"quoted\" \\ dir/09.cpp", "/ws/tab\there\r.cpp"}) {
    CAPTURE(path);
    const std::string unit = runner::learner_unit(path, "int main() { return 0; }");
    CHECK(unit.find('\n') == unit.find("\"\n") + 1);  // the #line directive is one line
    CHECK(compiles(dir, unit));
  }
}

TEST_CASE("the judge's reads refuse a FIFO, a device, a symlink to /dev/zero and a huge file, at once") {
  Folder dir;
  const std::string fifo = dir.file("fifo"), zero = dir.file("zero"), sparse = dir.file("sparse.cpp");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink("/dev/zero", zero);  // read through, never written
  {
    std::ofstream out(sparse, std::ios::binary);  // 3 GB of holes: nothing on disk
    out.seekp(3LL << 30);
    out << 'x';
  }
  const auto start = std::chrono::steady_clock::now();
  CHECK(refusal([&] { runner::read_text_file(fifo); }).find("a FIFO") != std::string::npos);
  CHECK(refusal([&] { runner::read_text_file(zero); }).find("a device") != std::string::npos);
  CHECK(refusal([&] { runner::read_text_file(sparse); }).find("larger than") != std::string::npos);
  CHECK(refusal([&] { runner::read_text_file(dir.path.string()); }).find("a directory") != std::string::npos);
  CHECK(refusal([&] { runner::read_text_file(dir.file("none")); }).find("No such file") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  if (::geteuid() == 0) {  // a fake node with /dev/full's numbers, in the test's folder
    REQUIRE(::mknod(dir.file("full").c_str(), S_IFCHR | 0600, ::makedev(1, 7)) == 0);
    CHECK(refusal([&] { runner::read_text_file(dir.file("full")); }).find("a device") != std::string::npos);
  }
  // A symlink to a regular file is the learner's file all the same; the judge's own files refuse one.
  put(dir.file("real.cpp"), "int x;\n");
  fs::create_symlink(dir.file("real.cpp"), dir.file("link.cpp"));
  CHECK(runner::read_text_file(dir.file("link.cpp")) == "int x;\n");
  CHECK(refusal([&] {
          lab::read_regular_file(dir.file("link.cpp"), {.follow = false});
        }).find("a symbolic link") != std::string::npos);
  // A log is cut at its cap, and says so.
  put(dir.file("compile.log"), std::string(5000, 'e'));
  bool cut = false;
  CHECK(lab::read_regular_file(dir.file("compile.log"), {.max_bytes = 1000, .cut = true}, &cut).size() ==
        1000);
  CHECK(cut);
}

namespace {

// A stand-in for a lab's executable: a shell script in `dir` (run_lab_executable runs any program).
std::string fake_lab(const Folder& dir, const std::string& body) {
  const std::string path = dir.file("fake_lab.sh");
  put(path, "#!/bin/sh\n" + body + "\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

const runner::ExerciseInfo kNoHints{};

}  // namespace

TEST_CASE(
    "the report reaches the judge on a descriptor of its own, and no path is on the lab's command line") {
  Folder dir;
  const std::string lab = fake_lab(
      dir,
      "echo \"$@\" >&2\n"
      "printf '{\"passed\": true, \"checks\": [{\"key\": \"k\", \"claim\": \"c\", \"evidence\": \"e\", "
      "\"passed\": true}]}' >&$AMP_LAB_REPORT_FD\n");
  const runner::LabRun run = runner::run_lab_executable(lab, /*full=*/false, /*deadline_s=*/20);
  CHECK(run.exit_code == 0);
  CHECK(run.err == "--device cpu --quick\n");  // nothing the code could write a report to
  const runner::Verdict v = runner::verdict_from_run(kNoHints, run, {"k"});
  CHECK(v.kind == runner::Verdict::Passed);
}

TEST_CASE("a failed build shows its first 60 lines, then how many more there are and the log that has them") {
  Folder dir;
  std::string log;
  for (int k = 1; k <= 100'000; ++k)
    log += "learner.cpp:" + std::to_string(k) + ": error: 'x' was not declared\n";
  put(dir.file("compile.log"), log);
  const std::string shown = runner::build_messages(dir.path, dir.path / "build.out");
  CHECK(std::count(shown.begin(), shown.end(), '\n') == runner::kBuildLinesShown + 1);
  CHECK(shown.rfind("learner.cpp:1: error", 0) == 0);
  CHECK(shown.find("learner.cpp:60: error") != std::string::npos);
  CHECK(shown.find("learner.cpp:61: error") == std::string::npos);
  CHECK(shown.substr(shown.rfind('[')) ==
        "[... 99940 more lines cut; the whole log: " + dir.file("compile.log") + "]\n");
  // A short log is shown whole; with no compile.log, the link's, else what the build printed.
  put(dir.file("compile.log"), "one: error\ntwo: error\n");
  CHECK(runner::build_messages(dir.path, dir.path / "build.out") == "one: error\ntwo: error\n");
  fs::remove(dir.path / "compile.log");
  put(dir.file("build.out"), "ninja: build stopped\n");
  CHECK(runner::build_messages(dir.path, dir.path / "build.out") == "ninja: build stopped\n");
}

TEST_CASE("a report of the wrong types, or too large, is the lab's error in one line, never an exception") {
  Folder dir;
  for (const std::string& report :
       {std::string(
            R"({"passed": true, "checks": [{"key": 5, "claim": "c", "evidence": "e", "passed": true}]})"),
        std::string(R"({"passed": "yes", "checks": []})"),
        std::string(
            R"({"passed": true, "checks": [{"key": "k", "claim": "c", "evidence": "e", "passed": 1}]})")}) {
    CAPTURE(report);
    put(dir.file("report.json"), report);
    const std::string lab = fake_lab(dir, "cat '" + dir.file("report.json") + "' >&$AMP_LAB_REPORT_FD");
    const runner::LabRun run = runner::run_lab_executable(lab, false, 20);
    runner::Verdict v;
    CHECK_NOTHROW(v = runner::verdict_from_run(kNoHints, run, {"k"}));
    CHECK(v.kind == runner::Verdict::LabError);
    CHECK(v.output.find("the lab's report is not one the lab writes") != std::string::npos);
  }
  const std::string lab = fake_lab(dir, "head -c 5000000 /dev/zero >&$AMP_LAB_REPORT_FD");
  const runner::Verdict v =
      runner::verdict_from_run(kNoHints, runner::run_lab_executable(lab, false, 20), {});
  CHECK(v.kind == runner::Verdict::LabError);
  CHECK(v.output.find("larger than") != std::string::npos);
}

TEST_CASE("what the lab's program starts, in its own session or orphaned, is gone when the run returns") {
  Folder dir;
  const std::string lab = fake_lab(dir, "setsid sleep 60 & echo $! > '" + dir.file("left") +
                                            "'\n(sleep 61 & echo $! > '" + dir.file("orphan") + "')\nexit 0");
  runner::run_lab_executable(lab, false, 20);
  for (const char* name : {"left", "orphan"}) {
    CAPTURE(name);
    std::ifstream in(dir.file(name));
    pid_t pid = 0;
    REQUIRE(static_cast<bool>(in >> pid));
    const bool gone = ::kill(pid, 0) != 0 && errno == ESRCH;
    CHECK(gone);
  }
}
