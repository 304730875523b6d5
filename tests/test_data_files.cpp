// Where the runner's data files are, and the one check of a path a flag writes (src/runner/data_files.h):
// never a file amp-lab reads, however the path is spelt, and never '' or the next flag. Nothing here is
// written: the check refuses before anything is.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "lab/cli_args.h"
#include "runner/data_files.h"
#include "support/temp_folder.h"

namespace fs = std::filesystem;

namespace {

// XDG_STATE_HOME set to `value` for the life of this object.
struct StateHome {
  std::optional<std::string> old;
  explicit StateHome(const fs::path& value) {
    if (const char* v = std::getenv("XDG_STATE_HOME")) old = v;
    ::setenv("XDG_STATE_HOME", value.c_str(), 1);
  }
  ~StateHome() {
    if (old)
      ::setenv("XDG_STATE_HOME", old->c_str(), 1);
    else
      ::unsetenv("XDG_STATE_HOME");
  }
};

// The refusal's message, or "" when the path is accepted.
std::string refusal(const std::string& flag, const std::string& path,
                    const std::vector<runner::Input>& also = {}) {
  try {
    runner::check_output_path(flag, path, also);
    return "";
  } catch (const lab::UsageError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("a written path that is one of the data files, a lab's source or the --quiz file is refused") {
  const test_support::TempFolder s("data_files");
  const std::string data = runner::data_folder();
  CHECK(refusal("--json", data + "/exercises.yaml") ==
        "--json: '" + data +
            "/exercises.yaml' is the exercises file, which amp-lab reads; write the JSON elsewhere");
  CHECK(refusal("--report-file", data + "/glossary.yaml").find("is the glossary, which amp-lab reads") !=
        std::string::npos);
  CHECK(refusal("--json", data + "/quiz.yaml").find("is the quiz file") != std::string::npos);
  // Another spelling of the path, and a symlink to the file.
  CHECK(refusal("--json", data + "/labs/../exercises.yaml").find("is the exercises file") !=
        std::string::npos);
  fs::create_symlink(runner::exercises_path(), s.path / "link.json");
  CHECK(refusal("--json", (s.path / "link.json").string()).find("is the exercises file") !=
        std::string::npos);
  // Every file under labs/: a lab's source.
  const fs::path source = runner::labs_folder() / "02_loss_scaling" / "lab.cpp";
  REQUIRE(fs::is_regular_file(source));
  CHECK(refusal("--report-file", source.string()).find("is a lab's source") != std::string::npos);
  // The --quiz file a walk reads (given as `also`), through a hard link too.
  const fs::path quiz = s.path / "other.yaml";
  std::ofstream(quiz) << "title: T\n";
  fs::create_hard_link(quiz, s.path / "hard.json");
  const std::vector<runner::Input> also{{quiz.string(), "the quiz file"}};
  CHECK(refusal("--json", (s.path / "hard.json").string(), also).find("is the quiz file") !=
        std::string::npos);
  CHECK(refusal("--json", (s.path / "hard.json").string()).empty());  // without it, any other file is written
  CHECK(refusal("--json", (s.path / "new.json").string(), also).empty());
}

TEST_CASE("the saved progress and its lock are refused as written paths, there yet or not") {
  const test_support::TempFolder s("data_files");
  const StateHome home(s.path / "state");
  const fs::path state = s.path / "state" / "amp-lab";
  CHECK(runner::default_state_dir() == state);
  fs::create_directories(state);  // the folder only: the files are not there yet
  CHECK(refusal("--json", (state / "progress.json").string()).find("is the saved progress,") !=
        std::string::npos);
  CHECK(refusal("--json", (state / ".." / "amp-lab" / "progress.json.lock").string())
            .find("is the saved progress's lock") != std::string::npos);
  std::ofstream(state / "progress.json") << "{}\n";
  fs::create_symlink(state / "progress.json", s.path / "p.json");
  CHECK(refusal("--json", (s.path / "p.json").string()).find("is the saved progress,") != std::string::npos);
}

TEST_CASE("a written path that is empty or the next flag is refused, not taken for a file name") {
  CHECK(refusal("--json", "") == "--json needs a file name, got ''");
  CHECK(refusal("--json", "--quick") == "--json needs a file name, got '--quick'");
  CHECK(refusal("--report-file", "--no-color") == "--report-file needs a file name, got '--no-color'");
}
