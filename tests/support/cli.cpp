#include "support/cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "amp_lab_paths.h"

namespace fs = std::filesystem;

namespace test_support {

namespace {

// Made before main, so that every program the test starts inherits it; removed at exit.
struct StateHome {
  fs::path path = fs::temp_directory_path() / ("amp_lab_cli_state_" + std::to_string(::getpid()));
  StateHome() {
    fs::create_directories(path);
    ::setenv("XDG_STATE_HOME", path.c_str(), 1);
  }
  ~StateHome() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
const StateHome state_home_folder;

}  // namespace

const fs::path& state_home() {
  return state_home_folder.path;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("amp_lab_cli_" + std::to_string(::getpid()) + "_" + name);
}

Result run(const std::string& args, const std::string& input, const std::string& program,
           const std::string& env) {
  static int n = 0;
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(n++);
  const fs::path in = scratch(tag + ".in"), out = scratch(tag + ".out"), err = scratch(tag + ".err");
  std::ofstream(in) << input;
  const std::string cmd = "NO_COLOR=1 " + env + " \"" AMP_LAB_BINARY_DIR "/bin/" + program + "\" " + args +
                          " < \"" + in.string() + "\" > \"" + out.string() + "\" 2> \"" + err.string() + "\"";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  fs::remove(in), fs::remove(out), fs::remove(err);
  return r;
}

int sh(const std::string& script) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string q(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
  return n;
}

std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\n';
    if (!blank)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  return out;
}

bool inert(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
  return true;
}

}  // namespace test_support
