// exercises.yaml: the exercises (the lab whose AMP code the learner writes, and in a few words what) and
// each one's hints, the known mistakes and how the lab's report shows them. Read with the data files' loader
// (runner/yaml_file.h); runner/exercise.h judges a learner's file with them. Nothing here needs LibTorch.
#pragma once

#include <string>
#include <vector>

#include "runner/data_files.h"

namespace runner {

// One of a failed check's named values (lab::Check::values) and the range [lo, hi] it must lie in; a
// boolean counts as 0 (false) or 1 (true).
struct ValueRange {
  std::string name;
  double lo = 0, hi = 0;
};

// A known mistake, recognised from the lab's report: the check `check` fails, and, where given, its named
// values lie in `values`' ranges or the observation `observation` in [lo, hi]; or (check "") the lab stopped
// with an error containing `error`.
struct ExerciseHint {
  std::string id;  // names the mistake: the tests' wrong solutions say which hint they expect
  std::string check;
  // The steps a learner sees, one more each time they ask (amp-lab hint): `text`, what the report showed
  // and the principle, with the verdict; then `api`, the call or op to use; then `code`, the fix itself.
  // api and code may be empty (the hint then has fewer steps).
  std::string text;
  std::string api;
  std::string code;
  std::vector<ValueRange> values;  // all must hold
  std::string observation;
  double lo = 0, hi = 0;
  std::string error;
  bool shared = false;  // from library_errors: every exercise has it, after its own hints
};

struct ExerciseInfo {
  std::string id;     // "09": the lab's number
  std::string stem;   // "09_gradient_accumulation": labs/<stem>/amp.cpp, labs/<stem>/exercise.cpp
  std::string lab;    // the lab's id, "gradient-accumulation"
  std::string title;  // what the learner writes, in a few words
  // The keys of the checks that measure only the lab's own runs (its reference steps, its demonstration
  // of the problem with the code the starter keeps), not the code the learner writes: the verdict shows
  // them as the lab's context and counts only the others.
  std::vector<std::string> lab_runs;
  std::vector<ExerciseHint> hints;

  // Whether the check `key` judges the learner's code (is not among lab_runs).
  bool judges_learner(const std::string& key) const;
};

// The number of steps a hint has (1 to 3: text, then api and code where given), and step k's text.
int hint_steps(const ExerciseHint& h);
const std::string& hint_step(const ExerciseHint& h, int step);

// The keys exercises.yaml may hold.
extern const std::vector<std::string> kExercisesKeys;  // exercises, library_errors
extern const std::vector<std::string> kExerciseKeys;   // lab, title, lab_runs, hints
extern const std::vector<std::string>
    kHintKeys;  // id, check, value, observation, range, error, text, api, code

// Loads and validates exercises.yaml, as quiz.yaml is loaded: `exercises`, a non-empty list, each a
// mapping with `lab` (a lab's id that `labs` knows and says has a starter, at most one exercise each: the
// exercise's id and stem are the lab's number and folder), `title`, `lab_runs` (optional, a non-empty list of
// check keys, each once) and `hints` (optional, a non-empty list). A hint has an `id` (unique in its
// exercise), a `text`, optionally `api` and `code` (the later steps; code only after an api), and either
// `error` (words of the lab's error message) or `check` (a check's key) with at most one of `value` (one
// mapping {name, range: [lo, hi]}, or a non-empty list of them: that check's named values, all in range) and
// `observation` with `range: [lo, hi]` (two numbers, lo <= hi); a check's evidence text is never matched.
// Which check, value and observation keys a lab reports only its run says: tests/test_labs.cpp holds every
// key named here to the lab's real --json. Every error is one DataError line "file:line:column: field: what".
// `library_errors` (optional, a non-empty list of hints with id, error and text): the errors the amp library
// and LibTorch raise for a misused call, each with the rule it names; every exercise gets them after its own
// hints (shared = true), so a mistake the exercise knows better is named by the exercise's hint.
std::vector<ExerciseInfo> load_exercises(const std::string& path, const LabLookup& labs);
// The same for text already in memory; `name` stands for the file in messages.
std::vector<ExerciseInfo> parse_exercises(std::string text, const std::string& name, const LabLookup& labs);

}  // namespace runner
