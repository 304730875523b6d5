// The exercises: the learner writes a lab's AMP code, and the lab's own checks judge it.
//
// A lab with an exercise keeps its AMP code in labs/NN_<stem>/amp.cpp and the starter beside it,
// exercise.cpp: amp.cpp with its key lines taken out. The learner edits a copy in a workspace; `amp-lab
// check` writes it into the build as that exercise's learner unit, rebuilds only that executable (the
// learner's file in amp.cpp's place, linked with the lab's own lab.cpp object), runs it with --json and
// reads the checks.
// A failed check may come with a hint: the known mistake that fails it in that way (ExerciseHint).
// Nothing here needs LibTorch.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner {

// A known mistake, recognised from the lab's report: the check `check` fails, and, where given, its
// evidence contains `evidence`, the observation `observation` lies in [lo, hi], or (check "") the lab
// stopped with an error containing `error`.
struct ExerciseHint {
  std::string id;  // names the mistake: the tests' wrong solutions say which hint they expect
  std::string check;
  std::string text;
  std::string evidence;
  std::string observation;
  double lo = 0, hi = 0;
  std::string error;
};

struct ExerciseInfo {
  std::string id;     // "09"
  std::string stem;   // "09_gradient_accumulation": labs/<stem>/amp.cpp, labs/<stem>/exercise.cpp
  std::string lab;    // the lab's id, "gradient-accumulation"
  std::string title;  // what the learner writes, in a few words
  std::vector<ExerciseHint> hints;
};

// Every exercise, by id.
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
