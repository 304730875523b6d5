#include "runner/progress.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "amp/detail/atomic_file.h"
#include "lab/text.h"
#include "runner/quiz_order.h"

namespace runner {
namespace {

constexpr size_t kMaxProgressBytes = 4 << 20;  // thousands of walks' worth; more is not ours
constexpr int kMaxCount = 1'000'000;           // the most hints, attempts or seconds a record holds
constexpr auto kLockWait = std::chrono::seconds(5);
// amp-lab writes 4 levels; the unknown keys it keeps are copied and written out by recursive code
// (nlohmann's copy and dump), so a deeper file is refused before it is parsed: 50,000 nested brackets in
// 100 KB overflowed the stack of every command that read the progress.
constexpr int kMaxProgressDepth = 32;

const char* outcome_name(Outcome o) {
  return o == Outcome::Right ? "right" : o == Outcome::Wrong ? "wrong" : "skipped";
}

std::optional<Outcome> outcome_of(const std::string& name) {
  if (name == "right") return Outcome::Right;
  if (name == "wrong") return Outcome::Wrong;
  if (name == "skipped") return Outcome::Skipped;
  return std::nullopt;
}

nlohmann::json attempt_json(const Attempt& a) {
  nlohmann::json j = {{"outcome", outcome_name(a.outcome)}, {"hints", a.hints}, {"at", a.at}};
  if (a.answer) j["answer"] = std::string(1, a.answer);
  if (a.shown) j["shown"] = std::string(1, a.shown);
  if (!a.order.empty()) j["order"] = a.order;
  if (a.seconds >= 0) j["seconds"] = a.seconds;
  if (!a.walk.empty()) j["walk"] = a.walk;
  return j;
}

// A key of the object `j` that holds nothing yet: `key`, else "key (2)", "key (3)"...: what is kept aside
// never replaces what was kept aside before.
std::string free_key(const nlohmann::json& j, const std::string& key) {
  std::string k = key;
  for (int n = 2; j.contains(k); ++n) k = fmt::format("{} ({})", key, n);
  return k;
}

nlohmann::json to_json(const Progress& p) {
  nlohmann::json j = p.other.is_object() ? p.other : nlohmann::json::object();
  j["version"] = kProgressVersion;
  if (p.order_seed) {
    if (j.contains("learner") && !j["learner"].is_object()) {  // a version-1 file's own key: kept aside
      j[free_key(j, "learner_kept")] = std::move(j["learner"]);
      j["learner"] = nlohmann::json::object();
    }
    j["learner"]["order_seed"] = *p.order_seed;
  }
  j["quiz"] = nlohmann::json::object();
  for (const auto& [track, questions] : p.quiz) {
    nlohmann::json& qs = j["quiz"][track]["questions"] = nlohmann::json::object();
    for (const auto& [number, r] : questions) {
      nlohmann::json rec = {{"id", r.id}, {"attempts", nlohmann::json::array()}};
      for (const auto& a : r.history) rec["attempts"].push_back(attempt_json(a));
      if (r.unrecorded) rec["unrecorded"] = r.unrecorded;
      qs[std::to_string(number)] = std::move(rec);
    }
  }
  j["exercises"] = p.exercises;
  return j;
}

bool is_count(const nlohmann::json& j, int least) {
  return j.is_number_integer() && j.get<long long>() >= least && j.get<long long>() <= kMaxCount;
}

bool is_letter(const nlohmann::json& j) {
  if (!j.is_string()) return false;
  const std::string s = j.get<std::string>();
  return s.size() == 1 && s[0] >= 'a' && s[0] <= 'z';
}

// One attempt as versions 1 (the record itself) and 2 write it, or why it is not one.
std::optional<Attempt> attempt_of(const nlohmann::json& j, std::string* why) {
  const auto text = [&](const char* key) { return j.contains(key) && j[key].is_string(); };
  if (!j.is_object() || !text("outcome") || !text("at") || !j.contains("hints") || !is_count(j["hints"], 0)) {
    *why = "a question's record lacks id, outcome, hints or at";
    return std::nullopt;
  }
  const auto outcome = outcome_of(j["outcome"].get<std::string>());
  const auto bad_letter = [&](const char* key) { return j.contains(key) && !is_letter(j[key]); };
  if (!outcome || bad_letter("answer") || bad_letter("shown") || (j.contains("order") && !text("order")) ||
      (j.contains("seconds") && !is_count(j["seconds"], 0)) || (j.contains("walk") && !text("walk"))) {
    *why = "a question's outcome or answer is not one amp-lab writes";
    return std::nullopt;
  }
  Attempt a;
  a.outcome = *outcome;
  a.answer = j.contains("answer") ? j["answer"].get<std::string>()[0] : 0;
  a.shown = j.contains("shown") ? j["shown"].get<std::string>()[0] : 0;
  a.order = j.contains("order") ? j["order"].get<std::string>() : "";
  a.hints = j["hints"].get<int>();
  a.seconds = j.contains("seconds") ? j["seconds"].get<int>() : -1;
  a.walk = j.contains("walk") ? j["walk"].get<std::string>() : "";
  a.at = j["at"].get<std::string>();
  return a;
}

// The latest attempt's fields and the count, from the history.
void sum_up(QuestionRecord& r) {
  const Attempt& latest = r.history.back();
  r.outcome = latest.outcome;
  r.answer = latest.answer;
  r.hints = latest.hints;
  r.at = latest.at;
  r.attempts = static_cast<int>(r.history.size()) + r.unrecorded;
}

// One question's record, or why it is not one. Version 1 kept only the latest attempt and a count:
// it becomes the one attempt kept, the earlier ones counted as unrecorded.
std::optional<QuestionRecord> record_of(const nlohmann::json& j, int version, std::string* why) {
  if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) {
    *why = "a question's record lacks id, outcome, hints or at";
    return std::nullopt;
  }
  QuestionRecord r;
  r.id = j["id"].get<std::string>();
  if (version == 1) {
    if (j.contains("attempts") && !is_count(j["attempts"], 1)) {
      *why = "a question's record lacks id, outcome, hints or at";
      return std::nullopt;
    }
    auto a = attempt_of(j, why);
    if (!a) return std::nullopt;
    a->shown = 0;  // version 1 showed quiz.yaml's order: the letter was the id, kept in answer
    r.history.push_back(std::move(*a));
    r.unrecorded = j.contains("attempts") ? j["attempts"].get<int>() - 1 : 0;
  } else {
    if (!j.contains("attempts") || !j["attempts"].is_array() || j["attempts"].empty() ||
        (j.contains("unrecorded") && !is_count(j["unrecorded"], 0))) {
      *why = "a question's record has no attempts";
      return std::nullopt;
    }
    for (const auto& attempt : j["attempts"]) {
      auto a = attempt_of(attempt, why);
      if (!a) return std::nullopt;
      r.history.push_back(std::move(*a));
    }
    r.unrecorded = j.contains("unrecorded") ? j["unrecorded"].get<int>() : 0;
  }
  sum_up(r);
  return r;
}

// A positive question number written as JSON keys are: "12".
std::optional<int> number_of(const std::string& key) {
  if (key.empty() || key.size() > 6 || key[0] == '0') return std::nullopt;
  for (const char c : key)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(key);
}

// Whether arrays and objects in the JSON text `text` nest deeper than `limit`, by one pass over its bytes
// (brackets inside strings do not count); no tree is built.
bool nested_deeper_than(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> exercise_entry_problem(const nlohmann::json& entry) {
  if (!entry.is_object()) return "not an object";
  if (entry.contains("status") &&
      (!entry["status"].is_string() || (entry["status"] != "started" && entry["status"] != "done")))
    return "status is not \"started\" or \"done\"";
  for (const char* key : {"checks_run", "hints"})
    if (entry.contains(key) && (!entry[key].is_number_integer() || entry[key].get<long long>() < 0))
      return std::string(key) + " is not a count";
  for (const char* key : {"last", "at"})
    if (entry.contains(key) && !entry[key].is_string()) return std::string(key) + " is not a string";
  if (entry.contains("solution") && !entry["solution"].is_boolean()) return "solution is not true or false";
  return std::nullopt;
}

namespace {

// Moves the exercise entry `entry` of `id` into the top-level object j["exercises_set_aside"], beside what
// that holds: an entry of `id` set aside before stays, this one takes "id (2)". A value there that is not an
// object is moved first to a top-level key of its own (exercises_set_aside_kept), at the depth it was found.
void set_entry_aside(nlohmann::json& j, const std::string& id, nlohmann::json entry) {
  nlohmann::json& aside = j["exercises_set_aside"];
  if (!aside.is_object()) {
    if (!aside.is_null()) j[free_key(j, "exercises_set_aside_kept")] = std::move(aside);
    aside = nlohmann::json::object();
  }
  aside[free_key(aside, id)] = std::move(entry);
}

// The progress in `j`, or why it is not amp-lab's progress (another schema or version). What it keeps as
// found (the exercises, other keys) is moved out of `j`, not copied.
std::optional<Progress> from_json(nlohmann::json& j, std::string* why) {
  if (!j.is_object() || !j.contains("version") || !j.contains("quiz")) {
    *why = "no version and quiz";
    return std::nullopt;
  }
  if (!j["version"].is_number_integer() || j["version"].get<long long>() < 1 ||
      j["version"].get<long long>() > kProgressVersion) {
    *why = fmt::format("version {}, not 1 to {}", lab::quote(j["version"].dump(), 20), kProgressVersion);
    return std::nullopt;
  }
  if (!j["quiz"].is_object() || (j.contains("exercises") && !j["exercises"].is_object())) {
    *why = "quiz or exercises is not an object";
    return std::nullopt;
  }
  Progress p;
  p.version = j["version"].get<int>();
  if (p.version >= 2 && j.contains("learner")) {
    const auto& learner = j["learner"];
    if (!learner.is_object() || (learner.contains("order_seed") &&
                                 !(learner["order_seed"].is_number_unsigned() &&
                                   learner["order_seed"].get<std::uint64_t>() <= kMaxLearnerSeed))) {
      *why = "learner.order_seed is not a seed amp-lab draws";
      return std::nullopt;
    }
    if (learner.contains("order_seed")) p.order_seed = learner["order_seed"].get<std::uint64_t>();
    if (learner.size() > (learner.contains("order_seed") ? 1u : 0u)) p.other["learner"] = learner;
  }
  for (const auto& [track, entry] : j["quiz"].items()) {
    if (!entry.is_object() || !entry.contains("questions") || !entry["questions"].is_object()) {
      *why = "track " + lab::quote(track, 30) + " has no questions object";
      return std::nullopt;
    }
    for (const auto& [key, rec] : entry["questions"].items()) {
      const auto number = number_of(key);
      auto record = record_of(rec, p.version, why);
      if (!number || !record) {
        if (!number) *why = "a question number " + lab::quote(key, 20) + " is not a positive integer";
        return std::nullopt;
      }
      p.quiz[track][*number] = std::move(*record);
    }
  }
  if (j.contains("exercises")) {
    for (auto& [id, entry] : j["exercises"].items()) {
      if (const auto problem = exercise_entry_problem(entry)) {
        set_entry_aside(j, id, std::move(entry));
        p.set_aside.push_back(fmt::format("the entry of exercise {} ({})", lab::quote(id, 20), *problem));
      } else {
        p.exercises[id] = std::move(entry);
      }
    }
  }
  for (auto& [key, value] : j.items())
    if (key != "version" && key != "quiz" && key != "exercises" && !(key == "learner" && p.version >= 2))
      p.other[key] = std::move(value);
  return p;
}

std::string describe_errno(int err) {
  return std::strerror(err);
}

// The whole of `fd`, at most kMaxProgressBytes; nullopt with `why` on an error or a larger file.
std::optional<std::string> read_all(int fd, std::string* why) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = "unreadable: " + describe_errno(errno);
      return std::nullopt;
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxProgressBytes) {
      *why = fmt::format("larger than {} bytes", kMaxProgressBytes);
      return std::nullopt;
    }
  }
}

// An exclusive flock on `path`, waiting at most kLockWait; -1 with errno set when not had.
int lock(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
      const int err = errno == EWOULDBLOCK ? ETIMEDOUT : errno;
      ::close(fd);
      errno = err;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fd;
}

class Lock {
 public:
  explicit Lock(const std::filesystem::path& path) : fd_(lock(path)), error_(fd_ < 0 ? errno : 0) {}
  ~Lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;
  bool held() const { return fd_ >= 0; }
  int error() const { return error_; }

 private:
  int fd_;
  int error_;
};

std::string display(const std::filesystem::path& path) {
  return lab::escape(path.string());
}

}  // namespace

std::optional<Progress> parse_progress(const std::string& text, std::string* why) {
  if (nested_deeper_than(text, kMaxProgressDepth)) {
    *why = fmt::format("nested more than {} levels deep", kMaxProgressDepth);
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *why = "not JSON";
    return std::nullopt;
  }
  return from_json(j, why);
}

std::string timestamp(std::time_t when) {
  std::tm utc{};
  ::gmtime_r(&when, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::optional<ProgressStore> default_progress_store(std::string* why) {
  if (const auto dir = default_state_dir(why)) return ProgressStore(*dir);
  return std::nullopt;
}

ProgressStore::ProgressStore(std::filesystem::path dir, Warn warn)
    : dir_(std::move(dir)), file_(dir_ / "progress.json"), warn_(std::move(warn)) {
  if (!warn_)
    warn_ = [](const std::string& m) { std::cerr << "amp-lab: warning: " << lab::safe_line(m) << "\n"; };
}

void ProgressStore::warn(const std::string& message) {
  warn_(message);
}

void ProgressStore::warn_once(const std::string& message) {
  if (!save_failed_) warn(message);
  save_failed_ = true;
}

bool ProgressStore::set_aside(const std::string& reason) {
  const std::string stamp = timestamp();
  for (int k = 1; k < 100; ++k) {
    const std::filesystem::path aside =
        file_.string() + ".set-aside-" + stamp + (k > 1 ? "-" + std::to_string(k) : "");
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(aside, ec))) continue;
    if (::rename(file_.c_str(), aside.c_str()) == 0) {
      warn(fmt::format("{} is not amp-lab's progress ({}); set aside as {}, starting afresh", display(file_),
                       reason, display(aside.filename())));
      return true;
    }
    warn(fmt::format(
        "{} is not amp-lab's progress ({}) and cannot be set aside ({}); progress will not be saved",
        display(file_), reason, describe_errno(errno)));
    break;
  }
  read_only_ = true;
  return false;
}

// The saved progress; nullopt when the file exists but can be neither read nor set aside. With
// `may_set_aside` the lock is held, and a file that is not amp-lab's progress is set aside.
std::optional<Progress> ProgressStore::read_locked(bool may_set_aside) {
  struct stat st{};
  if (::lstat(file_.c_str(), &st) != 0) {
    if (errno == ENOENT) return Progress{};
    warn(fmt::format("cannot look at {}: {}; progress will not be saved", display(file_),
                     describe_errno(errno)));
    read_only_ = true;
    return std::nullopt;
  }
  std::string why;
  std::optional<std::string> text;
  if (S_ISLNK(st.st_mode))
    why = "a symbolic link, not a file";
  else if (S_ISDIR(st.st_mode))
    why = "a directory, not a file";
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (const int fd = ::open(file_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); fd < 0)
    why = "unreadable: " + describe_errno(errno);
  else {
    text = read_all(fd, &why);
    ::close(fd);
  }
  if (text)
    if (auto p = parse_progress(*text, &why)) {
      // One line, however many: 60,000 bad entries once printed 60,000 warnings at every command.
      if (p->set_aside.size() == 1)
        warn(fmt::format("{}: {} is not one amp-lab writes; set aside under \"exercises_set_aside\"",
                         display(file_), p->set_aside.front()));
      else if (!p->set_aside.empty())
        warn(
            fmt::format("{}: {} exercise entries set aside, see \"exercises_set_aside\" there; the first: {}",
                        display(file_), p->set_aside.size(), p->set_aside.front()));
      return p;
    }
  if (!may_set_aside) {
    warn(fmt::format("{} is not amp-lab's progress ({}); left as it is, its lock not taken", display(file_),
                     why));
    return std::nullopt;
  }
  if (set_aside(why)) return Progress{};
  return std::nullopt;
}

Progress ProgressStore::load() {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file_, ec))) return {};
  const Lock held(dir_ / "progress.json.lock");
  if (!held.held())  // another amp-lab may be writing: read what is there, change nothing
    warn(fmt::format("cannot lock {}: {}; reading the progress without it",
                     display(dir_ / "progress.json.lock"), describe_errno(held.error())));
  return read_locked(held.held()).value_or(Progress{});
}

bool ProgressStore::save_locked(const std::function<void(Progress&)>& change) {
  if (read_only_) return false;  // a file that could be neither read nor set aside: said once, kept
  std::error_code ec;
  const bool made = std::filesystem::create_directories(dir_, ec);
  if (ec) {
    warn_once(fmt::format("cannot save progress: cannot make {}: {}", display(dir_), ec.message()));
    return false;
  }
  // The learner's own record (XDG asks 0700 of the state folder); a folder already there keeps its mode.
  if (made) ::chmod(dir_.c_str(), 0700);
  const Lock held(dir_ / "progress.json.lock");
  if (!held.held()) {
    warn_once(fmt::format("cannot save progress: cannot lock {}: {}", display(dir_ / "progress.json.lock"),
                          describe_errno(held.error())));
    return false;
  }
  std::optional<Progress> progress = read_locked(/*may_set_aside=*/true);
  if (!progress) return false;  // read_locked said why, and that nothing will be saved
  if (progress->version < kProgressVersion && !keep_old_version()) return false;
  change(*progress);
  try {  // a new file is the learner's alone: 0600
    amp::detail::write_file_atomically(file_.string(), to_json(*progress).dump(2) + "\n", {.mode = 0600});
  } catch (const amp::detail::AtomicFileError& e) {
    warn_once(fmt::format("cannot save progress to {}: {}", display(file_), e.code().message()));
    return false;
  }
  return true;
}

// Before a version-1 file is first written as version 2: a copy of it, byte for byte, beside it
// (progress.json.version-1; an earlier copy is not overwritten). False, warned once, when it cannot be made:
// then nothing is saved over the file.
bool ProgressStore::keep_old_version() {
  const std::filesystem::path copy = file_.string() + ".version-1";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(copy, ec))) return true;
  std::string why;
  std::optional<std::string> text;
  if (const int fd = ::open(file_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); fd >= 0) {
    text = read_all(fd, &why);
    ::close(fd);
  } else {
    why = describe_errno(errno);
  }
  try {
    if (text) amp::detail::write_file_atomically(copy.string(), *text, {.mode = 0600});
  } catch (const amp::detail::AtomicFileError& e) {
    text.reset();
    why = e.code().message();
  }
  if (!text)
    warn_once(fmt::format("cannot save progress: cannot keep a copy of the version-1 {} as {}: {}",
                          display(file_), display(copy.filename()), why));
  return text.has_value();
}

bool ProgressStore::update(const std::function<void(Progress&)>& change) {
  return save_locked(change);
}

namespace {

// Adds `attempt` to question `number` of `track`, after the attempts saved for the same id.
void add_attempt(Progress& p, const std::string& track, int number, const std::string& id, Attempt attempt) {
  if (attempt.at.empty()) attempt.at = timestamp();
  attempt.seconds = std::min(attempt.seconds, kMaxCount);  // a prompt left open for weeks still reads back
  QuestionRecord& r = p.quiz[track][number];
  if (r.id != id) r = QuestionRecord{};  // another question at this number (quiz.yaml renumbered)
  r.id = id;
  r.history.push_back(std::move(attempt));
  sum_up(r);
}

}  // namespace

bool ProgressStore::record(const std::string& track, int number, QuestionRecord record) {
  Attempt attempt;
  attempt.outcome = record.outcome;
  attempt.answer = record.outcome == Outcome::Skipped ? '\0' : record.answer;
  attempt.hints = record.hints;
  attempt.at = record.at;
  return save_locked([&](Progress& p) { add_attempt(p, track, number, record.id, attempt); });
}

bool ProgressStore::record(const Question& q, Attempt attempt, std::optional<std::uint64_t> learner_seed) {
  if (attempt.outcome == Outcome::Skipped) attempt.answer = attempt.shown = 0;
  return save_locked([&](Progress& p) {
    if (!p.order_seed) p.order_seed = learner_seed;
    add_attempt(p, q.track, q.number, q.id, attempt);
  });
}

bool ProgressStore::record(const Question& q, Outcome outcome, char answer, int hints) {
  Attempt attempt;
  attempt.outcome = outcome;
  attempt.answer = answer;
  attempt.hints = hints;
  return record(q, std::move(attempt));
}

bool ProgressStore::reset(const std::string& track) {
  return save_locked([&](Progress& p) {
    if (track.empty())
      p.quiz.clear();
    else
      p.quiz.erase(track);
  });
}

const QuestionRecord* find_record(const Progress& progress, const Question& q) {
  const auto track = progress.quiz.find(q.track);
  if (track == progress.quiz.end()) return nullptr;
  const auto r = track->second.find(q.number);
  return r == track->second.end() || r->second.id != q.id ? nullptr : &r->second;
}

std::vector<int> resume_questions(const Progress& progress, const Quiz& quiz) {
  std::vector<int> numbers;
  for (const auto& q : quiz.questions)
    if (!find_record(progress, q)) numbers.push_back(q.number);
  return numbers;
}

std::vector<int> retry_questions(const Progress& progress, const Quiz& quiz) {
  std::vector<int> numbers;
  for (const auto& q : quiz.questions)
    if (const QuestionRecord* r = find_record(progress, q); r && r->outcome != Outcome::Right)
      numbers.push_back(q.number);
  return numbers;
}

std::string only_command(const Quiz& full, const std::string& track, const std::vector<int>& numbers,
                         const std::string& program) {
  if (numbers.empty()) return "";
  std::string list;
  for (const int n : numbers) list += (list.empty() ? "" : ",") + std::to_string(n);
  const bool default_track = !full.tracks.empty() && track == full.tracks.front().id;
  return program + " quiz" + (default_track || track.empty() ? std::string() : " --track " + track) +
         " --only " + list;
}

}  // namespace runner
