// The runner's data files: quiz.yaml (the questions), glossary.yaml (the terms the labs print) and
// exercises.yaml (the exercises and their hints), side by side in one folder: the clone's top level, or
// P/share/amp-lab beside an installed runner P/bin/amp-lab. src/runner/yaml_file.h reads them all. Also where
// the learner's progress and workspace are, and the one check that no file a flag writes replaces any of the
// files the runner and the labs read.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
  // Whether labs/<stem>/exercise.cpp, the starter an exercise copies, is there (exercises.yaml may name only
  // such a lab); true where no one looked.
  bool has_starter = true;
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
// The clone's labs/ (each lab's source, and the starter an exercise copies: labs/<stem>/exercise.cpp) and
// workspace/ (the learner's exercise files, by default; a folder .gitignore ignores).
std::filesystem::path labs_folder();
std::filesystem::path default_workspace();
// ${XDG_STATE_HOME}/amp-lab when XDG_STATE_HOME is an absolute path, else ~/.local/state/amp-lab (HOME, or
// the password database's home): the learner's progress.json. nullopt when there is no home, with the reason
// in `why`.
std::optional<std::filesystem::path> default_state_dir(std::string* why = nullptr);

// A file read, and what it is ("the quiz file"), for a refusal's message.
using Input = std::pair<std::string, std::string>;
// Every file a file written by a flag must not replace: `also` (a --quiz file), $AMP_LAB_QUIZ and the data
// folder's quiz.yaml, glossary.yaml and exercises.yaml, the saved progress and its lock (there yet or not),
// and each file under labs/ (a lab's source) and the default workspace (the learner's own).
std::vector<Input> files_read(const std::vector<Input>& also = {});
// The one check of a path that a flag (`flag`: "--json", "--report-file") is about to write, before anything
// runs; lab::UsageError, one line, when the path is '' or starts with "--" (the flag had no value and took
// the next flag for one), or is one of files_read(also): the same file by device and inode (a symlink, a
// hard link or another spelling of its path counts), or, for a file not there yet, the same path once
// symlinks in its folders are resolved.
void check_output_path(const std::string& flag, const std::string& path, const std::vector<Input>& also = {});

}  // namespace runner
