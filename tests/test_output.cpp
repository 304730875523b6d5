// Where the real binaries write: standard output on a full disk or closed, colour only on a terminal that
// has it, and the --json file (unwritable, written by two walks at once, or naming a file the walk reads).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "support/cli.h"
#include "support/folder.h"
#include "support/walk.h"

namespace test_output {

namespace fs = std::filesystem;
using namespace test_support;

TEST_CASE("output that cannot be written is an error: stdout on a full disk or closed, --json unwritable") {
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/");
  const fs::path err = scratch("write_err_" + std::to_string(::getpid()));
  CHECK(sh(bin + "amp-lab list > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "amp-lab list: cannot write to standard output: No space left on device"));
  // Output past stdout's buffer: an earlier write fails, and the cause is still named.
  REQUIRE(sh(bin + "amp-lab glossary | wc -c | awk '$1 > 8192 { exit 0 } { exit 1 }'") == 0);
  CHECK(sh(bin + "amp-lab glossary > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "amp-lab glossary: cannot write to standard output: No space left on device"));
  CHECK(sh(bin + "lab03_number_formats --quick > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "lab03_number_formats: cannot write to standard output"));
  CHECK(sh(bin + "amp-lab list >&- 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "standard output is closed"));
  CHECK(sh(bin + "amp-lab quiz --reveal --quick --device cpu --only 3 --json /dev/full > /dev/null 2> " +
           err.string()) == 3);
  CHECK(has(slurp(err), "--json: writing '/dev/full' failed: No space left on device"));
  // An unwritable path is found before any lab runs.
  const auto r = run(kTwo + " --answers cd --json /nonexistent/dir/walk.json");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--json: cannot write '/nonexistent/dir/walk.json': No such file or directory"));
  CHECK_FALSE(has(r.out, "━━"));
  fs::remove(err);
}

TEST_CASE(
    "help and version to a full disk or a closed stdout fail with one line, and a lab's write error shows "
    "once") {
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/");
  const fs::path err = scratch("help_err");
  const std::string commands[] = {"amp-lab --version",    "amp-lab --help",
                                  "amp-lab help",         "amp-lab run --help",
                                  "amp-lab run 3 --help", "lab03_number_formats --help",
                                  "amp-lab quiz --help",  "amp-lab info --help"};
  for (const auto& c : commands) {
    for (const char* to : {"> /dev/full", ">&-"}) {
      CAPTURE(c);
      CAPTURE(to);
      const int code = sh(bin + c + " " + to + " 2> " + err.string());
      CHECK(code == 3);
      CHECK(count(slurp(err), "\n") == 1);
      CHECK((has(slurp(err), "No space left on device") || has(slurp(err), "standard output is closed")));
    }
  }
  CHECK(sh(bin + "amp-lab run 3 --quick > /dev/full 2> " + err.string()) == 3);
  CHECK(count(slurp(err), "cannot write to standard output") == 1);
  CHECK(count(slurp(err), "\n") == 1);
  fs::remove(err);
}

TEST_CASE("TERM=dumb gets no colour even on a terminal") {
  const fs::path out = scratch("term_" + std::to_string(::getpid()));
  const std::string cmd = q(AMP_LAB_BINARY_DIR "/bin/lab03_number_formats") + " --quick";
  // script(1) gives the lab a pseudo-terminal, where it would use colour.
  REQUIRE(sh("TERM=xterm script -qec " + q(cmd) + " /dev/null > " + q(out.string())) == 0);
  CHECK(has(slurp(out), "\x1b["));  // colour on a terminal: the test can tell
  REQUIRE(sh("TERM=dumb script -qec " + q(cmd) + " /dev/null > " + q(out.string())) == 0);
  CHECK_FALSE(has(slurp(out), "\x1b["));
  fs::remove(out);
}

// ---- The --json file --------------------------------------------------------------------------------------

TEST_CASE(
    "two walks writing the same --json file at once leave one whole run's output, and no temporary file") {
  for (int attempt = 0; attempt < 2; ++attempt) {
    CAPTURE(attempt);
    Folder dir("amp_lab_cli_json2");
    const std::string f = (dir.path / "walk.json").string(), bin = AMP_LAB_BINARY_DIR "/bin/amp-lab";
    // Waited for by process id: `wait %2` fails with "no such job" (127) when that walk ended first.
    const int code =
        sh("'" + bin + "' quiz --quick --device cpu --only 3,8 --file-order --answers cd --json " + f +
           " >/dev/null 2>&1 & a=$!; '" + bin +
           "' quiz --quick --device cpu --only 6 --file-order --answers a --json " + f +
           " >/dev/null 2>&1 & b=$!; wait $a && wait $b");
    CHECK(code == 0);
    const auto j = nlohmann::json::parse(slurp(f));  // throws (fails the test) on a mix of the two
    std::vector<int> numbers;
    for (const auto& q : j["questions"]) numbers.push_back(q["number"].get<int>());
    CHECK((numbers == std::vector<int>{3, 8} || numbers == std::vector<int>{6}));
    CHECK(j["completed"] == true);
    CHECK(dir.entries() == std::vector<std::string>{"walk.json"});
  }
}

TEST_CASE("--json naming a file the walk reads is refused before any lab runs, however the path is spelt") {
  Folder dir("amp_lab_cli_same");
  const fs::path quiz = dir.path / "q.yaml";
  const std::string text = slurp(AMP_LAB_SOURCE_DIR "/quiz.yaml");
  std::ofstream(quiz) << text;
  fs::create_symlink(quiz, dir.path / "link.json");
  fs::create_hard_link(quiz, dir.path / "hard.json");
  const std::string d = dir.path.string(), bin = "'" AMP_LAB_BINARY_DIR "/bin/amp-lab'";
  const std::string walk = " quiz --quick --device cpu --only 3 --file-order --answers c";
  const std::string cases[] = {
      bin + walk + " --quiz q.yaml --json q.yaml",
      bin + walk + " --quiz q.yaml --json ./q.yaml",
      bin + walk + " --quiz q.yaml --json " + d + "/../" + dir.path.filename().string() + "/q.yaml",
      bin + walk + " --quiz q.yaml --json link.json",
      bin + walk + " --quiz q.yaml --json hard.json",
      "AMP_LAB_QUIZ=" + d + "/q.yaml " + bin + walk + " --json ./q.yaml",  // the default quiz file
  };
  for (const auto& c : cases) {
    CAPTURE(c);
    const int code = sh("cd " + d + " && " + c + " > out.txt 2> err.txt");
    const std::string err = slurp(dir.path / "err.txt"), out = slurp(dir.path / "out.txt");
    CHECK(code == 2);
    CHECK(has(err, "which amp-lab reads; write the JSON elsewhere"));
    CHECK(count(err, "\n") == 1);
    CHECK_FALSE(has(out, "━━"));  // refused before the first lab
    CHECK(slurp(quiz) == text);
    fs::remove(dir.path / "out.txt"), fs::remove(dir.path / "err.txt");
    CHECK(dir.entries().size() == 3);  // q.yaml, link.json, hard.json: no temporary file
  }
}

TEST_CASE(
    "--json '' and --json naming the saved progress or its lock are refused up front, there yet or not") {
  Folder dir("amp_lab_cli_json_progress");
  const fs::path state = dir.path / "state" / "amp-lab";
  fs::create_directories(state);  // the folder is there; the files come in the second round
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/amp-lab");
  for (const bool there : {false, true}) {
    if (there)
      std::ofstream(state / "progress.json") << R"({"version": 1, "quiz": {}, "kept": true})"
                                             << "\n";
    if (there) std::ofstream(state / "progress.json.lock");
    const std::string before = there ? slurp(state / "progress.json") : "";
    for (const std::string& target : {std::string("''"), q((state / "progress.json").string()),
                                      q((state / "progress.json.lock").string()),
                                      q((state / ".." / "amp-lab" / "progress.json").string())}) {
      for (const char* answers :
           {" --file-order --answers c", ""}) {  // a walk that saves answers and one that does not
        CAPTURE(there);
        CAPTURE(target);
        CAPTURE(answers);
        const int code =
            sh("cd " + q(dir.path.string()) + " && XDG_STATE_HOME=" + q((dir.path / "state").string()) +
               " NO_COLOR=1 " + bin + " quiz --quick --device cpu --only 3" + answers + " --json " + target +
               " < /dev/null > out.txt 2> err.txt");
        const std::string err = slurp(dir.path / "err.txt");
        CHECK(code == 2);
        CHECK(count(err, "\n") == 1);
        CHECK((has(err, "--json needs a file name, got ''") || has(err, "which amp-lab reads")));
        CHECK_FALSE(has(slurp(dir.path / "out.txt"), "━━"));  // before the first lab
        CHECK(fs::exists(state / "progress.json") == there);
        if (there) CHECK(slurp(state / "progress.json") == before);
      }
    }
  }
}

}  // namespace test_output
