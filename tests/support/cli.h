// The build's executables driven through their command lines, as a user drives them: run with a scripted
// stdin or through bash, and what they print read back and searched. Every program started from a test
// that links this file saves its progress under a folder of the test's own (XDG_STATE_HOME, set before
// main), never in the user's ~/.local/state.
#pragma once

#include <filesystem>
#include <string>

namespace test_support {

struct Result {
  int code = -1;
  std::string out, err;
};

// The folder XDG_STATE_HOME names for this test process and every program it starts.
const std::filesystem::path& state_home();

std::string slurp(const std::filesystem::path& p);
// A path under the temporary directory, per process, so that test runs in other clones at the same time do
// not share files.
std::filesystem::path scratch(const std::string& name);

// Runs `build/bin/<program> <args>` with `input` on stdin and `env` ("NAME=value" words) before it;
// NO_COLOR keeps the output plain.
Result run(const std::string& args, const std::string& input = "", const std::string& program = "amp-lab",
           const std::string& env = "");
// Runs a shell script (for redirections run() does not make); returns its exit code. The script is bash's
// argument as it is, not put inside another shell's quotes, so the quoting in it is the only one.
int sh(const std::string& script);
// `word` as one word for the shell, in single quotes: the clone's path may hold spaces or any letter.
std::string q(const std::string& word);

bool has(const std::string& text, const std::string& part);
int count(const std::string& text, const std::string& part);
// The text with every run of spaces and newlines made one space: wrapped prose compares with its source.
std::string squeeze(const std::string& text);
// No byte a terminal would act on: control characters other than newline.
bool inert(const std::string& text);

}  // namespace test_support
