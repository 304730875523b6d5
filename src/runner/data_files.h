// The runner's data files: quiz.yaml (the questions), read by src/runner/yaml_file.h's hardened loader.
#pragma once

#include <stdexcept>
#include <string>

namespace runner {

// A data file that cannot be read or is not what it should be, in one line:
// "quiz.yaml:12:5: questions[2].answer: must be one letter from a to d, got 'e'".
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace runner
