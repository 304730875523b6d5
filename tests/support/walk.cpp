#include "support/walk.h"

#include <fstream>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "runner/catalog_labs.h"
#include "support/cli.h"

namespace fs = std::filesystem;

namespace test_support {

const runner::Quiz& project_quiz() {
  static const runner::Quiz quiz = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  return quiz;
}

const runner::Quiz& default_track() {
  static const runner::Quiz track = runner::select_track(project_quiz(), project_quiz().tracks.front().id);
  return track;
}

fs::path two_track_quiz() {
  const fs::path path = scratch("tracks.yaml");
  std::ofstream(path) << R"(title: Two tracks
tracks:
  - id: core
    title: The default track
  - id: other
    title: The second track
questions:
  - id: formats
    lab: number-formats
    prompt: Which?
    options: [A, B, C, D]
    answer: c
    hint: Look.
    explanation: Because.
  - id: policy
    track: other
    lab: autocast-policy
    prompt: What?
    options: [A, B, C, D]
    answer: d
    hint: Look again.
    explanation: Because, again.
)";
  return path;
}

FakeLabs::FakeLabs() {
  for (const auto& decl : lab::catalog())
    fs::create_symlink(real(decl.executable()), folder.path / decl.executable());
}

void FakeLabs::replace(const std::string& exe, const std::string& body) {
  fs::remove(folder.path / exe);
  std::ofstream(folder.path / exe) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(folder.path / exe, fs::perms::owner_all);
}

std::string FakeLabs::real(const std::string& exe) const {
  return AMP_LAB_BINARY_DIR "/bin/" + exe;
}

}  // namespace test_support
