// Where the runner's data files are (runner/data_files.h), and the check that a written file is none of
// them. The one file of the runner's libraries that includes the clone's paths: it is kept in a library of
// its own, so only it differs between clones.
#include "runner/data_files.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "amp_lab_paths.h"
#include "lab/cli_args.h"
#include "lab/text.h"

namespace runner {

namespace fs = std::filesystem;

std::string data_folder() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = (exe.parent_path() / AMP_LAB_DATA_FROM_BIN).lexically_normal();
    if (fs::is_directory(installed, ec)) return installed.string();
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

fs::path labs_folder() {
  return fs::path(AMP_LAB_SOURCE_DIR) / "labs";
}

fs::path default_workspace() {
  return fs::path(AMP_LAB_SOURCE_DIR) / "workspace";
}

std::optional<fs::path> default_state_dir(std::string* why) {
  // The XDG base directory specification ignores a relative XDG_STATE_HOME.
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && state[0] == '/')
    return fs::path(state) / "amp-lab";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && h[0] == '/')
    home = h;
  else if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir && pw->pw_dir[0] == '/')
    home = pw->pw_dir;
  if (home.empty()) {
    if (why) *why = "neither XDG_STATE_HOME nor HOME names a folder";
    return std::nullopt;
  }
  return fs::path(home) / ".local" / "state" / "amp-lab";
}

namespace {

// The files under `folder`, at most kMostFiles of them (labs/ holds about 80): what a write must not replace.
void add_files_under(const fs::path& folder, const std::string& what, std::vector<Input>& inputs) {
  constexpr size_t kMostFiles = 4096;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
  for (size_t n = 0; !ec && it != end && n < kMostFiles; it.increment(ec), ++n)
    if (it->is_regular_file(ec)) inputs.push_back({it->path().string(), what});
}

// `path` made absolute with the symlinks of its existing part resolved: two spellings of one path alike.
std::string resolved(const std::string& path) {
  std::error_code ec;
  const auto p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

bool same_file(const struct stat& a, const std::string& other) {
  struct stat b{};
  return ::stat(other.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

std::vector<Input> files_read(const std::vector<Input>& also) {
  std::vector<Input> inputs = also;
  inputs.push_back({default_quiz_path(), "the quiz file"});
  inputs.push_back({data_folder() + "/quiz.yaml", "the quiz file"});
  inputs.push_back({glossary_path(), "the glossary"});
  inputs.push_back({exercises_path(), "the exercises file"});
  if (const auto dir = default_state_dir()) {
    inputs.push_back({(*dir / "progress.json").string(), "the saved progress"});
    inputs.push_back({(*dir / "progress.json.lock").string(), "the saved progress's lock"});
  }
  add_files_under(labs_folder(), "a lab's source", inputs);
  add_files_under(default_workspace(), "an exercise file of yours", inputs);
  return inputs;
}

void check_output_path(const std::string& flag, const std::string& path, const std::vector<Input>& also) {
  // '' would be written as a hidden temporary file in the current folder and fail only at the rename.
  if (path.empty() || path.rfind("--", 0) == 0)
    throw lab::UsageError(fmt::format("{} needs a file name, got {}", flag, lab::quote(path)));
  struct stat st{};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  const std::string spelt = resolved(path);
  for (const auto& [input, what] : files_read(also))
    if ((exists && same_file(st, input)) || (!exists && resolved(input) == spelt))
      throw lab::UsageError(fmt::format("{}: {} is {}, which amp-lab reads; write the JSON elsewhere", flag,
                                        lab::quote(path), what));
}

}  // namespace runner
