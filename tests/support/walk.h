// What the tests of the walk through the real amp-lab share: the project's quiz, a made-up quiz of two
// tracks, and a folder of lab executables in which a test replaces one.
#pragma once

#include <filesystem>
#include <string>

#include "runner/quiz.h"
#include "support/folder.h"

namespace test_support {

// Two quick questions: Q3 (number formats, answer c) and Q8 (autocast policy, answer d).
inline const std::string kTwo = "quiz --quick --device cpu --file-order --only 3,8";

// The project's quiz file, its labs checked against labs/catalog.cpp: counts come from it, never from
// numbers written into a test.
const runner::Quiz& project_quiz();
// The questions of the default track (`amp-lab quiz` without --track).
const runner::Quiz& default_track();

// A quiz file with two tracks over two quick labs: Q1 number-formats (core), Q2 autocast-policy (other).
std::filesystem::path two_track_quiz();

// A folder standing in for build/bin's labs ($AMP_LAB_LAB_DIR): every lab executable linked in, so that a
// test can replace one by a script that crashes, hangs or prints no report.
struct FakeLabs {
  Folder folder{"amp_lab_cli_labs"};
  FakeLabs();
  // `body` is a sh script; "$@" holds the runner's arguments (--json and the walk's flags).
  void replace(const std::string& exe, const std::string& body);
  std::string real(const std::string& exe) const;  // the build's own executable
  std::string env() const { return "AMP_LAB_LAB_DIR=" + folder.path.string(); }
};

}  // namespace test_support
