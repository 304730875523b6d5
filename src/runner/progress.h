// The learner's progress, kept between walks: for each track, each question answered right or wrong or
// skipped, the option chosen, the hints used and when. One JSON file per learner,
// ${XDG_STATE_HOME:-~/.local/state}/amp-lab/progress.json:
//
//   {"version": 1,
//    "quiz": {"core": {"questions": {"2": {"id": "loss-scaling", "outcome": "wrong", "answer": "a",
//                                          "hints": 1, "attempts": 1, "at": "2026-11-30T08:03:12Z"}}}},
//    "exercises": {}}
//
// "exercises" belongs to the exercises (a later issue): this module keeps it as it finds it, and so any
// other top-level key. Every save is a locked read-modify-write (flock on progress.json.lock, at most a
// few seconds' wait) written atomically (a temporary file in the same folder, fsync, rename), so two
// amp-lab processes saving at once both keep their answers and the file is always one complete JSON.
// A file that is not amp-lab's progress (not JSON, another schema or version, not a regular file,
// unreadable) gets a one-line warning and is set aside beside it (progress.json.set-aside-<UTC time>),
// never overwritten; when it cannot be set aside nothing is saved. No failure here is ever fatal: the
// walk goes on, and a save that failed says so once.
#pragma once

#include <ctime>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/quiz.h"

namespace runner {

enum class Outcome { Right, Wrong, Skipped };

struct QuestionRecord {
  std::string id;  // the question's id when it was answered: a renumbered quiz.yaml does not mix them up
  Outcome outcome = Outcome::Skipped;
  char answer = 0;   // the option chosen, 'a'..'d'; 0 when skipped
  int hints = 0;     // hints shown before this answer
  int attempts = 1;  // how many times it was answered or skipped, this one included
  std::string at;    // when, UTC, "2026-11-30T08:03:12Z"
};

struct Progress {
  std::map<std::string, std::map<int, QuestionRecord>> quiz;  // track id -> question number -> latest
  nlohmann::json exercises = nlohmann::json::object();        // each entry as amp-lab writes it (below)
  nlohmann::json other = nlohmann::json::object();            // any other top-level key, kept as found
  // Read, not saved: the exercise entries that were not as amp-lab writes them, moved to
  // other["exercises_set_aside"] (kept in the file there) and warned of once.
  std::vector<std::string> set_aside;
};

// Whether `entry` is an exercise's entry as amp-lab writes it: an object whose status is "started" or
// "done", checks_run and hints non-negative integers, last and at strings, solution a boolean (each one
// optional); otherwise why not, in a few words.
std::optional<std::string> exercise_entry_problem(const nlohmann::json& entry);

inline constexpr int kProgressVersion = 1;

// ${XDG_STATE_HOME}/amp-lab when XDG_STATE_HOME is an absolute path, else ~/.local/state/amp-lab (HOME, or
// the password database's home); nullopt when there is no home, with the reason in `why`.
std::optional<std::filesystem::path> default_state_dir(std::string* why = nullptr);

// The progress a file's text holds, or nullopt with why it is not amp-lab's progress (not JSON, nested
// too deep, another schema or version), as one line.
std::optional<Progress> parse_progress(const std::string& text, std::string* why);

// UTC now, "2026-11-30T08:03:12Z".
std::string timestamp(std::time_t when = std::time(nullptr));

class ProgressStore {
 public:
  using Warn = std::function<void(const std::string&)>;  // one line, without "\n"

  // Progress kept in `dir`/progress.json; `dir` is made (0700) at the first save. `warn` receives every
  // warning; by default each goes to stderr as "amp-lab: warning: ...".
  explicit ProgressStore(std::filesystem::path dir, Warn warn = {});

  const std::filesystem::path& file() const { return file_; }

  // What is saved; empty when there is no file yet. A file that is not amp-lab's progress is set aside
  // (warned) and reads as empty.
  Progress load();

  // Records `record` as the latest for question `number` of `track` (attempts counted on from the saved
  // record of the same question). Returns false when it could not be saved (warned once per store).
  bool record(const std::string& track, int number, QuestionRecord record);
  // The same for a question of the quiz: under its own track, so `--track all` and the single tracks
  // share one progress. `hints` and `answer` as in QuestionRecord.
  bool record(const Question& q, Outcome outcome, char answer, int hints);

  // Forgets the quiz progress of `track`, or of every track for "" (exercises are kept).
  bool reset(const std::string& track = "");

  // Any other change, as one locked read-modify-write (for the exercises).
  bool update(const std::function<void(Progress&)>& change);

 private:
  bool save_locked(const std::function<void(Progress&)>& change);
  std::optional<Progress> read_locked(bool may_set_aside);
  bool set_aside(const std::string& reason);
  void warn(const std::string& message);
  void warn_once(const std::string& message);

  std::filesystem::path dir_, file_;
  Warn warn_;
  bool save_failed_ = false;  // a failed save warns once
  bool read_only_ = false;    // a file that could be neither read nor set aside: never overwrite it
};

// The store in default_state_dir(); nullopt (and `why`) when there is no home to keep it in.
std::optional<ProgressStore> default_progress_store(std::string* why = nullptr);

// The latest record of `q`, when one is saved for its track, number and id.
const QuestionRecord* find_record(const Progress& progress, const Question& q);

// Where a walk of `quiz` (one track's questions, or all) resumes: the numbers of its questions with no
// record yet, in order. After a walk stopped at Q4 of 1-8, that is 4-8 (skipped ones are for --retry).
std::vector<int> resume_questions(const Progress& progress, const Quiz& quiz);
// The numbers of its questions last answered wrong or skipped, in order (`--retry`, and the end summary).
std::vector<int> retry_questions(const Progress& progress, const Quiz& quiz);

// The command that walks exactly `numbers`: "amp-lab quiz --only 2,4,6", with "--track ID" when `track`
// is not the default (first) track of `full`; "" for no numbers. `program` is how the learner runs amp-lab
// ("scripts/amp-lab" in a clone: the runner's command_name()).
std::string only_command(const Quiz& full, const std::string& track, const std::vector<int>& numbers,
                         const std::string& program = "amp-lab");

// `amp-lab progress`: where the file is, then for each track of `full` its questions (answered ones with
// the option chosen and whether it was right, hints and when; the others "-", never their answer) and the
// command that retries the missed and skipped ones; then the exercises, when the file has any. `width`
// columns (0: unlimited).
void print_progress(std::ostream& out, const Progress& progress, const Quiz& full,
                    const std::filesystem::path& file, size_t width, bool color = false,
                    const std::string& program = "amp-lab");

}  // namespace runner
