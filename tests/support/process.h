// Runs a program as a child process and collects what it printed: the tests drive the real executables.
#pragma once

#include <string>
#include <vector>

namespace test_support {

struct ProcessResult {
  int code = -1;  // exit code; 128 + N when signal N ended it
  bool timed_out = false;
  std::string out, err;
};

// Runs argv[0] (a path) with the arguments, stdin from /dev/null, and `env` ("NAME=value") added to the
// environment. A child still running after `timeout_s` is killed (SIGKILL) and reported as timed out.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s = 600,
                          const std::vector<std::string>& env = {});

}  // namespace test_support
