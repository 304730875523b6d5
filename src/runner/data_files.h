// The runner's data files: quiz.yaml (the questions), in one folder: the clone's top level, or
// P/share/amp-lab beside an installed runner P/bin/amp-lab. src/runner/yaml_file.h reads them.
#pragma once

#include <stdexcept>
#include <string>

namespace runner {

// A data file that cannot be read or is not what it should be, in one line:
// "quiz.yaml:12:5: questions[2].answer: must be one letter from a to d, got 'e'".
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The folder of the data files: P/share/amp-lab beside an installed runner (wherever it is run from),
// else the clone the runner was built in.
std::string data_folder();
// $AMP_LAB_QUIZ, else data_folder()'s quiz.yaml.
std::string default_quiz_path();

}  // namespace runner
