// The exercise commands through the real amp-lab: where the learner's file goes and what is said when that
// path is a folder, unwritable, empty or a dangling symlink.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "support/cli.h"
#include "support/folder.h"

namespace test_exercise_commands {

namespace fs = std::filesystem;
using namespace test_support;

TEST_CASE("exercise and check: a folder at the learner's path, --dir kept in suggestions, paths escaped") {
  Folder dir("amp_lab_cli_exercise");
  const std::string ws = (dir.path / "ws").string();
  const auto started = run("exercise 09 --dir " + q(ws));
  REQUIRE(started.code == 0);
  CHECK(has(started.out, "amp-lab check 09 --dir " + ws + " "));
  const size_t at = started.out.find("your file: ");
  REQUIRE(at != std::string::npos);
  const fs::path file = started.out.substr(at + 11, started.out.find('\n', at) - at - 11);
  REQUIRE(fs::is_regular_file(file));
  // A folder where the learner's file goes: both commands say so, neither sends the learner to the other.
  fs::remove(file);
  fs::create_directory(file);
  for (const std::string command : {"exercise", "check"}) {
    CAPTURE(command);
    const auto r = run(command + " 09 --dir " + q(ws));
    CHECK(r.code == 2);
    CHECK(r.err ==
          "amp-lab " + command + ": " + file.string() +
              " is a directory, not your exercise file: move it away, or use --dir another folder\n");
  }
  // No file yet in another workspace: the command suggested names that workspace.
  const std::string empty = (dir.path / "empty ws").string();
  fs::create_directories(empty);
  const auto none = run("check 09 --dir " + q(empty));
  CHECK(none.code == 2);
  CHECK(has(none.err, "yet: start with amp-lab exercise 09 --dir '" + empty + "'\n"));
  // A folder name with ESC in it is printed escaped.
  const auto esc = run("exercise 09 --dir " + q((dir.path / "e\x1b[31m").string()));
  CHECK(esc.code == 0);
  CHECK(inert(esc.out));
  CHECK(has(esc.out, "e\\x1b[31m/"));
  // A workspace that cannot be written: the cause, and exit 2 (the exercises' codes are 0, 1 and 2).
  const auto unwritable = run("exercise 09 --dir /proc/self");
  CHECK(unwritable.code == 2);
  CHECK(has(unwritable.err, "amp-lab exercise: cannot write /proc/self/"));
  CHECK(count(unwritable.err, ": ") == 2);  // "amp-lab exercise: cannot write FILE: <strerror>"
  CHECK(count(unwritable.err, "\n") == 1);
  // An empty --dir, and one that is a symlink to nothing: said as they are, not as a system error.
  const auto blank = run("exercise 09 --dir ''");
  CHECK(blank.code == 2);
  CHECK(blank.err == "amp-lab exercise: --dir needs a folder, got ''\n");
  fs::create_symlink(dir.path / "nowhere", dir.path / "dangling");
  const auto dangling = run("exercise 09 --dir " + q((dir.path / "dangling").string()));
  CHECK(dangling.code == 2);
  CHECK(has(dangling.err, "dangling is a symlink to nothing"));
  CHECK_FALSE(fs::exists(dir.path / "nowhere"));
}

}  // namespace test_exercise_commands
