// Where the runner's data files are (runner/data_files.h). The one file of the runner's libraries that
// includes the clone's paths: it is kept out of its library's unity unit, so only it differs between clones.
#include "runner/data_files.h"

#include <cstdlib>
#include <filesystem>

#include "amp_lab_paths.h"

namespace runner {

std::string data_folder() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = (exe.parent_path() / AMP_LAB_DATA_FROM_BIN).lexically_normal();
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return AMP_LAB_SOURCE_DIR;
}

std::string default_quiz_path() {
  if (const char* env = std::getenv("AMP_LAB_QUIZ"); env && *env) return env;
  return data_folder() + "/quiz.yaml";
}

std::string glossary_path() {
  return data_folder() + "/glossary.yaml";
}

std::string exercises_path() {
  return data_folder() + "/exercises.yaml";
}

}  // namespace runner
