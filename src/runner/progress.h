// The learner's progress, kept between walks: for each track, each question's attempts (right, wrong or
// skipped, the option chosen by its id and as it was shown, the order the options were shown in, the hints
// used, how long it took and when), and the learner's seed for drawing those orders. One JSON file per
// learner, ${XDG_STATE_HOME:-~/.local/state}/amp-lab/progress.json:
//
//   {"version": 2,
//    "learner": {"order_seed": 3141592653},
//    "quiz": {"core": {"questions": {"2": {"id": "loss-scaling", "attempts": [
//        {"outcome": "wrong", "answer": "a", "shown": "c", "order": "dbac", "hints": 1, "seconds": 41,
//         "walk": "core", "at": "2026-11-30T08:03:12Z"}]}}}},
//    "exercises": {}}
//
// Every attempt is kept, oldest first: a walk adds to a question's attempts and never replaces them (a
// `--track all` walk after a practice walk adds to the practice questions' attempts). A version-1 file
// (one record per question: id, outcome, answer, hints, attempts, at) is read as its records' latest
// attempts, with the attempts it counted before them kept as "unrecorded"; the first save of a version-1
// file copies it unchanged to progress.json.version-1 beside it first, so nothing it held is lost.
// "exercises" belongs to the exercises: this module keeps it as it finds it, and so any
// other top-level key. Every save is a locked read-modify-write (flock on progress.json.lock, at most a
// few seconds' wait) written atomically (a temporary file in the same folder, fsync, rename), so two
// amp-lab processes saving at once both keep their answers and the file is always one complete JSON.
// A file that is not amp-lab's progress (not JSON, another schema, a version after 2, not a regular file,
// unreadable) gets a one-line warning and is set aside beside it (progress.json.set-aside-<UTC time>),
// never overwritten; when it cannot be set aside nothing is saved. No failure here is ever fatal: the
// walk goes on, and a save that failed says so once.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/data_files.h"  // default_state_dir(): where the file is
#include "runner/quiz.h"

namespace runner {

enum class Outcome { Right, Wrong, Skipped };

// One answer (or skip) of one question.
struct Attempt {
  Outcome outcome = Outcome::Skipped;
  char answer = 0;    // the option chosen by its id (its letter in quiz.yaml), 'a'..'d'; 0 when skipped
  char shown = 0;     // the letter it was shown at; 0 when skipped or not known (a version-1 record)
  std::string order;  // the options' ids in the order shown ("dbac"); "" when not known
  int hints = 0;      // hints shown before this answer
  int seconds = -1;   // from the prompt to the answer; -1 when not known
  std::string walk;   // the track walked ("practice", "all"); "" when not known
  std::string at;     // when, UTC, "2026-11-30T08:03:12Z"
};

// A question's attempts. outcome, answer, hints and at are the latest attempt's, and attempts counts them
// all (history and unrecorded), so that code asking for the latest reads it directly.
struct QuestionRecord {
  std::string id;  // the question's id when it was answered: a renumbered quiz.yaml does not mix them up
  Outcome outcome = Outcome::Skipped;
  char answer = 0;               // the latest option chosen, by id; 0 when skipped
  int hints = 0;                 // hints shown before the latest answer
  int attempts = 1;              // how many times it was answered or skipped, the latest included
  std::string at;                // when the latest was, UTC
  std::vector<Attempt> history;  // every attempt kept, oldest first; the last is the latest
  int unrecorded = 0;  // attempts a version-1 file counted before the one it kept (their details not kept)
  // The first try: the oldest attempt kept, when none went unrecorded before it.
  const Attempt* first_try() const {
    return unrecorded == 0 && !history.empty() ? &history.front() : nullptr;
  }
};

inline constexpr int kProgressVersionRead = 2;  // the version written

struct Progress {
  std::map<std::string, std::map<int, QuestionRecord>> quiz;  // track id -> question number -> attempts
  std::optional<std::uint64_t> order_seed;  // the learner's seed for the options' order, once drawn
  nlohmann::json exercises = nlohmann::json::object();  // each entry as amp-lab writes it (below)
  nlohmann::json other = nlohmann::json::object();      // any other top-level key, kept as found
  // Read, not saved: the exercise entries that were not as amp-lab writes them, moved to
  // other["exercises_set_aside"] (kept in the file there, beside the entries set aside before: one of the
  // same id takes "ID (2)", and a value there that is not an object moves to "exercises_set_aside_kept")
  // and warned of in one line, however many.
  std::vector<std::string> set_aside;
  // Read, not saved: the version of the file read (1 is migrated at its first save).
  int version = kProgressVersionRead;
};

// Whether `entry` is an exercise's entry as amp-lab writes it: an object whose status is "started" or
// "done", checks_run and hints non-negative integers, last and at strings, solution a boolean (each one
// optional); otherwise why not, in a few words.
std::optional<std::string> exercise_entry_problem(const nlohmann::json& entry);

inline constexpr int kProgressVersion = kProgressVersionRead;  // version 1 files are read and migrated

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

  // Adds an attempt of question `number` of `track`, made of `record`'s outcome, answer, hints and at
  // (now when empty), after the saved attempts of the same question (a question of another id there
  // is replaced: quiz.yaml renumbered). Returns false when it could not be saved (warned once per store).
  bool record(const std::string& track, int number, QuestionRecord record);
  // Adds `attempt` to question `q`'s: under its own track, so `--track all` and the single tracks share
  // one progress. `learner_seed`: the seed its order was drawn from, saved as the learner's when the file
  // has none yet (the first save of a walk; a walk that saves nothing leaves no seed behind).
  bool record(const Question& q, Attempt attempt, std::optional<std::uint64_t> learner_seed = std::nullopt);
  // The same with only an outcome, the answer's id and the hints.
  bool record(const Question& q, Outcome outcome, char answer, int hints);

  // Forgets the quiz progress of `track`, or of every track for "" (exercises are kept).
  bool reset(const std::string& track = "");

  // Any other change, as one locked read-modify-write (for the exercises).
  bool update(const std::function<void(Progress&)>& change);

 private:
  bool save_locked(const std::function<void(Progress&)>& change);
  std::optional<Progress> read_locked(bool may_set_aside);
  bool set_aside(const std::string& reason);
  bool keep_old_version();
  void warn(const std::string& message);
  void warn_once(const std::string& message);

  std::filesystem::path dir_, file_;
  Warn warn_;
  bool save_failed_ = false;  // a failed save warns once
  bool read_only_ = false;    // a file that could be neither read nor set aside: never overwrite it
};

// The store in default_state_dir(); nullopt (and `why`) when there is no home to keep it in.
std::optional<ProgressStore> default_progress_store(std::string* why = nullptr);

// The attempts of `q`, when any are saved for its track, number and id.
const QuestionRecord* find_record(const Progress& progress, const Question& q);

// Where a walk of `quiz` (one track's questions, or all) resumes: the numbers of its questions with no
// record yet, in order. After a walk stopped at Q4 of 1-8, that is 4-8 (skipped ones are for --retry).
std::vector<int> resume_questions(const Progress& progress, const Quiz& quiz);
// The numbers of its questions whose latest attempt was wrong or skipped, in order (`--retry`, and the end
// summary).
std::vector<int> retry_questions(const Progress& progress, const Quiz& quiz);

// The command that walks exactly `numbers`: "amp-lab quiz --only 2,4,6", with "--track ID" when `track`
// is not the default (first) track of `full`; "" for no numbers. `program` is how the learner runs amp-lab
// ("scripts/amp-lab" in a clone: the runner's command_name()).
std::string only_command(const Quiz& full, const std::string& track, const std::vector<int>& numbers,
                         const std::string& program = "amp-lab");

// `amp-lab progress`: where the file is, then for each track of `full` its first-try score and its latest,
// its questions (answered ones with the first try's option and the latest's, each right or wrong, how many
// attempts, the latest's hints and when; the others "-", never their answer) and the command that retries
// what the latest attempts missed; then the exercises, when the file has any. `width` columns (0:
// unlimited). Each option is named by the letter it was shown at in that attempt (its id, the letter in
// quiz.yaml, for a version-1 record).
void print_progress(std::ostream& out, const Progress& progress, const Quiz& full,
                    const std::filesystem::path& file, size_t width, bool color = false,
                    const std::string& program = "amp-lab");

}  // namespace runner
