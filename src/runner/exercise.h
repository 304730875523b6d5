// The exercises: the learner writes a lab's AMP code, and the lab's own checks judge it.
//
// A lab with an exercise keeps its AMP code in labs/NN_<stem>/amp.cpp and the starter beside it,
// exercise.cpp: amp.cpp with its key lines taken out. The learner edits a copy in a workspace; `amp-lab
// check` writes it into the build as that exercise's learner unit, rebuilds only that executable (the
// learner's file in amp.cpp's place, linked with the lab's own lab.cpp object), runs it with --json and
// reads the checks.
// A failed check may come with a hint: the known mistake that fails it in that way (ExerciseHint, from
// exercises.yaml: runner/exercise_table.h).
// Nothing here needs LibTorch.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/exercise_table.h"

namespace runner {

// Every exercise, in exercises.yaml's order: read from exercises_path() (runner/data_files.h) on first use,
// its labs checked against labs/catalog.cpp. A file missing or malformed is a DataError, one line.
const std::vector<ExerciseInfo>& exercises();
// By id ("09", "9"), stem or lab id; nullptr when none matches.
const ExerciseInfo* find_exercise(const std::string& name);

struct CheckOutcome {
  std::string key, claim, evidence;
  bool passed = false;
};

struct Verdict {
  enum Kind { Passed, Failed, CompileError, LabError };
  Kind kind = Failed;
  std::vector<CheckOutcome> checks;
  std::vector<const ExerciseHint*> hints;  // the known mistakes that match, in the catalog's order
  std::string output;                      // the compiler's or the lab's messages, as they gave them
  double build_s = 0, run_s = 0;
  int held() const;
};

// The verdict from one run of an exercise's executable: its --json report (stdout), exit code and stderr.
Verdict verdict_from_run(const ExerciseInfo& e, const std::string& json_text, int exit_code,
                         const std::string& stderr_text);

// The hints of `e` that match this report (or, with `report` null, this error message).
std::vector<const ExerciseHint*> matching_hints(const ExerciseInfo& e, const nlohmann::json* report,
                                                const std::string& error);

// What a check prints: the checks, each failed one's hint, the verdict line.
void print_verdict(std::ostream& out, const ExerciseInfo& e, const Verdict& v,
                   const std::string& learner_path, bool color);

// What this build has: build/exercises/exercises.json, written by cmake/AmpLabExercises.cmake.
struct ExerciseBuild {
  std::string source_dir, build_dir, cmake;
  struct Unit {
    std::string target, executable, work;
  };
  std::map<std::string, Unit> units;  // by exercise id
};
// Throws ExerciseError (one line) when the file is missing or not what the build writes.
ExerciseBuild load_exercise_build(const std::filesystem::path& json_path);

// Builds the learner's file as exercise `e`'s executable and runs the lab's checks on it (quick mode
// unless `full`). Build and run messages go into the verdict, never to the terminal.
Verdict check_exercise(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& learner_path,
                       bool full);

// The workspace file of exercise `e` in `dir`: <dir>/<stem>.cpp.
std::filesystem::path workspace_file(const std::filesystem::path& dir, const ExerciseInfo& e);

}  // namespace runner
