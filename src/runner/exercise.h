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
  bool learner = true;  // judges the learner's code; false: one of the exercise's lab_runs, the lab's own
};

struct Verdict {
  enum Kind { Passed, Failed, CompileError, LabError };
  Kind kind = Failed;
  std::vector<CheckOutcome> checks;
  std::vector<const ExerciseHint*> hints;  // the known mistake that matches (matching_hints): one, or none
  std::string output;                      // the compiler's or the lab's messages, as they gave them
  std::string printed;  // what the learner's program printed itself (print_verdict cuts it)
  double build_s = 0, run_s = 0;
  int judged() const;                                        // the checks of the learner's code
  int held() const;                                          // those of them that hold
  std::vector<const CheckOutcome*> lab_runs_failed() const;  // the lab's own runs that did not hold
};

// One run of an exercise's executable, as the judge saw it. The lab writes its report to a file the judge
// made and handed it as a descriptor (AMP_LAB_REPORT_FD, lab/cli_args.h), not named on its command line, so
// nothing the learner's code prints on stdout can stand in for it or break it, and no path in its argv
// invites it to write one.
struct LabRun {
  std::string report;     // the report file's text; "" when the program wrote none
  std::string out, err;   // what it printed on stdout and stderr (the learner's prints, the lab's errors)
  int exit_code = 0;      // 128 + N when signal N ended it
  double deadline_s = 0;  // > 0: it was still running at this deadline, and was killed with its group
};

// The verdict from one run: the report must hold exactly `declared` (when not empty), each once, and agree
// with the exit code (0 when every check holds, 1 when one fails); anything else is a LabError that says so.
Verdict verdict_from_run(const ExerciseInfo& e, const LabRun& run, const std::vector<std::string>& declared);

// Runs a lab's executable, its report on a descriptor of the judge's (quick mode unless `full`, on the CPU,
// killed with its group after `deadline_s` seconds when > 0), its stdout and stderr kept (the first 64 KiB
// of each); every process it left, in whatever group or session, is killed before this returns.
LabRun run_lab_executable(const std::string& executable, bool full, double deadline_s);

// What the lab's own executable (its amp.cpp) declares and costs in one mode: the judge requires exactly
// these checks, and gives the learner's program a multiple of this time. Run once and kept in `cache`
// (a JSON file) until the executable changes; a cache that is not one the judge wrote is not used.
// Throws ExerciseError when the lab itself does not report.
struct LabReference {
  std::vector<std::string> checks;  // the check keys, in the report's order
  double seconds = 0;               // the run's wall time
  bool from_cache = false;          // read from the cache, not measured now
};
LabReference lab_reference(const std::string& lab_executable, const std::filesystem::path& cache, bool full);

// The hint of `e` that names the mistake this report shows (or, with `report` null, this error message):
// the first in the catalog's order keyed on a check's named values, an observation or the error, else the
// first catch-all of a failed check; none when nothing matches. One mistake is named at a time.
std::vector<const ExerciseHint*> matching_hints(const ExerciseInfo& e, const nlohmann::json* report,
                                                const std::string& error);

// What a check prints: the checks of the learner's code (PASS or FAIL), the lab's own runs as one line of
// context (named, never marked PASS; one that failed with the learner's file is shown as such), each
// failed check's hint (its first step: what the report showed and the principle), the verdict line
// ("your code: 2 of 6 checks hold").
void print_verdict(std::ostream& out, const ExerciseInfo& e, const Verdict& v,
                   const std::string& learner_path, bool color);

// print_verdict's middle: the checks, the lab's context line, the hints. runner/exercise_verdict.cpp.
void print_checks(std::ostream& out, const ExerciseInfo& e, const Verdict& v, bool color);
// The verdict's closing line, without style: "exercise 09 done: ...", "not yet: your code: ...".
std::string verdict_line(const ExerciseInfo& e, const Verdict& v);
// "all 5 checks hold", or for one check "its one check holds": what the verdict says when every judged check
// holds.
std::string all_hold(int judged);

// A hint's steps, one more each time the learner asks (amp-lab hint ID, or a key in watch): the verdict
// shows step 1 of the hint for each failed check; each later step is the next of the first of those hints
// that has one. What was shown is kept in the exercise's entry of progress.json: "last_hints" (the ids the
// last verdict showed) and "hint_steps" (per id, the steps shown so far).
struct HintStep {
  const ExerciseHint* hint = nullptr;
  int step = 0;  // 1 the principle, 2 the API to use, 3 the code
};
// Records a verdict's hints in `entry`: their ids as the last ones, step 1 of each as shown.
void record_verdict_hints(nlohmann::json& entry, const Verdict& v);
// The next step for the mistakes the last verdict showed, or none (no hint then, or every step shown).
std::optional<HintStep> next_hint_step(const ExerciseInfo& e, const nlohmann::json& entry);
// Records that `step` was shown.
void record_hint_step(nlohmann::json& entry, const HintStep& step);
// What the hint command prints for a step (wrapped to `width`, 0: one line per paragraph).
std::string render_hint_step(const ExerciseInfo& e, const HintStep& step, size_t width);

// The messages of a build that failed, as printed before "does not build": the compiler's when the learner's
// unit failed (work/compile.log), else the linker's (work/link.log), else what the build said (`build_out`);
// their first kBuildLinesShown lines, then how many more there are and the log that holds them all (100,000
// errors were 44 MB on the terminal). "" when there are none.
inline constexpr size_t kBuildLinesShown = 60;
std::string build_messages(const std::filesystem::path& work, const std::filesystem::path& build_out);

// What this build has: build/exercises/exercises.json, written by cmake/AmpLabExercises.cmake.
struct ExerciseBuild {
  std::string source_dir, build_dir, cmake;
  std::string generator, make_program;  // CMake's generator ("Ninja", ...) and its build tool
  struct Unit {
    std::string target, executable, work;
    std::string lab_target, lab_executable;  // the lab's own executable, built from its amp.cpp
    std::string inputs_target, object;       // what the learner's unit builds on; the unit's object file
  };
  std::map<std::string, Unit> units;  // by exercise id
};
// Throws ExerciseError (one line) when the file is missing or not what the build writes.
ExerciseBuild load_exercise_build(const std::filesystem::path& json_path);

// Builds the learner's file as exercise `e`'s executable and runs the lab's checks on it (quick mode
// unless `full`). Build and run messages go into the verdict, never to the terminal; `progress` gets a line
// when the check waits (for another check of this exercise, for another build in the folder).
// One check of an exercise at a time (a lock in its work folder); what the learner's unit builds on is
// built under the build folder's lock, and with Ninja the unit's own compile and link (Ninja's commands for
// them) run after it, out of that lock, so that checks of different exercises build at once; the learner's
// program runs within its deadline: kDeadlineFactor times the lab's own time in that mode, at least
// kDeadlineFloor seconds (AMP_LAB_CHECK_DEADLINE, seconds, overrides it).
Verdict check_exercise(const ExerciseBuild& build, const ExerciseInfo& e, const std::string& learner_path,
                       bool full, std::ostream& progress);
inline constexpr double kDeadlineFactor = 10, kDeadlineFloor = 30;
// AMP_LAB_CHECK_DEADLINE, checked: plain decimal seconds from kMinCheckDeadline to 86400 (lab::UsageError
// quoting it otherwise); nullopt when unset. check_exercise asks before it builds anything.
inline constexpr double kMinCheckDeadline = 1;
std::optional<double> check_deadline_override();

// The workspace file of exercise `e` in `dir`: <dir>/<stem>.cpp.
std::filesystem::path workspace_file(const std::filesystem::path& dir, const ExerciseInfo& e);

}  // namespace runner
