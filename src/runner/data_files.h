// The runner's data files: quiz.yaml (the questions), glossary.yaml (the terms the labs print) and
// exercises.yaml (the exercises and their hints), side by side in one folder: the clone's top level, or
// P/share/amp-lab beside an installed runner P/bin/amp-lab. src/runner/yaml_file.h reads them all.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace runner {

// A data file that cannot be read or is not what it should be, in one line:
// "quiz.yaml:12:5: questions[2].answer: must be one letter from a to d, got 'e'".
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a data file may know of a lab it names by id: that it exists, its number and its folder's name.
struct LabRef {
  int number = 0;    // 2
  std::string stem;  // "02_loss_scaling"
};
// nullopt: no lab has that id. The runner answers from labs/catalog.cpp (runner/catalog_labs.h).
using LabLookup = std::function<std::optional<LabRef>(const std::string& lab_id)>;

// The folder of the data files: P/share/amp-lab beside an installed runner (wherever it is run from),
// else the clone the runner was built in.
std::string data_folder();
// $AMP_LAB_QUIZ, else data_folder()'s quiz.yaml.
std::string default_quiz_path();
// data_folder()'s glossary.yaml and exercises.yaml. They describe the labs, not a quiz: a quiz file chosen
// with --quiz or $AMP_LAB_QUIZ is glossed from the same glossary.
std::string glossary_path();
std::string exercises_path();

}  // namespace runner
