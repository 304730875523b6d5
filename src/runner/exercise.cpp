// The exercises (exercises.yaml, read once) and reading a run's report into a verdict (runner/exercise.h).
#include "runner/exercise.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "lab/cli_args.h"

#include "runner/catalog_labs.h"
#include "runner/exercise_files.h"

namespace runner {
namespace {

// How the lab's process ended, for the learner: signal N (reported as 128+N) by its name as strsignal
// gives it, "segmentation fault (signal 11)", not "exit code 139".
std::string ended_by(int exit_code) {
  const int signo = exit_code - 128;
  const char* name = signo > 0 && signo < NSIG ? ::strsignal(signo) : nullptr;
  if (!name) return "exit code " + std::to_string(exit_code);
  std::string text = name;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text + " (signal " + std::to_string(signo) + ")";
}

std::string digits_of(const std::string& name) {
  return name.size() == 1 && std::isdigit(static_cast<unsigned char>(name[0])) ? "0" + name : name;
}

bool hint_matches(const ExerciseHint& h, const nlohmann::json& report) {
  if (!h.error.empty()) return false;
  for (const auto& c : report["checks"]) {
    if (c.value("key", "") != h.check || c.value("passed", true)) continue;
    for (const ValueRange& r : h.values) {
      // A value the check does not report, or not a number or boolean, is in no range.
      const auto values = c.value("values", nlohmann::json::object());
      if (!values.is_object() || !values.contains(r.name)) return false;
      const auto& x = values[r.name];
      if (!x.is_number() && !x.is_boolean()) return false;
      const double d = x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>();
      if (!(d >= r.lo && d <= r.hi)) return false;
    }
    if (h.observation.empty()) return true;
    const auto& obs = report["observations"];
    if (!obs.is_object() || !obs.contains(h.observation)) return false;
    // An inf or NaN observation is null in the JSON: in no range (and no error).
    const auto& o = obs[h.observation];
    if (!o.is_object() || !o.contains("value") || !o["value"].is_number()) return false;
    const double v = o["value"].get<double>();
    return v >= h.lo && v <= h.hi;
  }
  return false;
}

}  // namespace

const std::vector<ExerciseInfo>& exercises() {
  // The catalog's labs, each with whether its starter is there: an exercise of a lab without one is refused
  // as exercises.yaml loads, not when a learner starts it.
  const auto lab_with_starter = [](const std::string& id) {
    auto ref = catalog_lab(id);
    std::error_code ec;
    if (ref)
      ref->has_starter = std::filesystem::is_regular_file(labs_folder() / ref->stem / "exercise.cpp", ec);
    return ref;
  };
  static const std::vector<ExerciseInfo> all = load_exercises(exercises_path(), lab_with_starter);
  return all;
}

const ExerciseInfo* find_exercise(const std::string& name) {
  const std::string id = digits_of(name);
  for (const auto& e : exercises())
    if (e.id == id || e.stem == name || e.lab == name) return &e;
  return nullptr;
}

int Verdict::judged() const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [](const auto& c) { return c.learner; }));
}

int Verdict::held() const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [](const auto& c) { return c.learner && c.passed; }));
}

std::vector<const CheckOutcome*> Verdict::lab_runs_failed() const {
  std::vector<const CheckOutcome*> out;
  for (const auto& c : checks)
    if (!c.learner && !c.passed) out.push_back(&c);
  return out;
}

// One mistake named: a mistake often fails several checks (a loss not divided moves every later step
// too), and a second hint would name a mistake not made. The first hint in the catalog's order keyed on
// what the report shows (its check's named values, an observation's range, the lab's error) names it; a hint
// keyed on its check alone (the catch-all of that check) only when none is.
std::vector<const ExerciseHint*> matching_hints(const ExerciseInfo& e, const nlohmann::json* report,
                                                const std::string& error) {
  const ExerciseHint* catch_all = nullptr;
  for (const ExerciseHint& h : e.hints) {
    const bool match =
        report ? hint_matches(h, *report) : !h.error.empty() && error.find(h.error) != std::string::npos;
    if (!match) continue;
    if (!h.error.empty() || !h.values.empty() || !h.observation.empty()) return {&h};
    if (!catch_all) catch_all = &h;
  }
  if (catch_all) return {catch_all};
  return {};
}

namespace {

// The last non-empty line of a program's stderr: the lab's own one-line message ("lab09_...: lab failed:
// ..."), without the device notice or the learner's prints before it.
std::string last_line(const std::string& text) {
  std::string last;
  for (size_t b = 0; b < text.size();) {
    const size_t end = std::min(text.find('\n', b), text.size());
    if (end > b) last = text.substr(b, end - b);
    b = end + 1;
  }
  return last;
}

std::string joined(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// What is wrong with the report's check keys against the lab's declared ones ("" when nothing is).
std::string keys_mismatch(const std::vector<CheckOutcome>& checks, const std::vector<std::string>& declared) {
  std::vector<std::string> got, want = declared, missing, extra;
  for (const auto& c : checks) got.push_back(c.key);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  if (missing.empty() && extra.empty()) return "";
  std::string why = "the report does not hold the lab's checks:";
  if (!missing.empty()) why += " missing " + joined(missing) + ";";
  if (!extra.empty()) why += " not the lab's (or twice) " + joined(extra) + ";";
  why.pop_back();
  return why;
}

}  // namespace

Verdict verdict_from_run(const ExerciseInfo& e, const LabRun& run, const std::vector<std::string>& declared) {
  Verdict v;
  v.kind = Verdict::LabError;
  const std::string lab_message = last_line(run.err);
  v.printed = run.out;
  if (!run.err.empty()) {  // stderr without the lab's own last line, which the verdict shows
    const std::string before = run.err.substr(0, run.err.rfind(lab_message));
    v.printed += before.find_first_not_of(" \n") == std::string::npos ? "" : before;
  }
  if (run.deadline_s > 0) {
    v.output = fmt::format("your code did not finish within {:.0f} s: stopped, with everything it started",
                           run.deadline_s);
    return v;
  }
  const auto report = nlohmann::json::parse(run.report, nullptr, /*allow_exceptions=*/false);
  if (!report.is_object() || !report.contains("checks") || !report["checks"].is_array()) {
    if (!lab_message.empty())
      v.output = lab_message;
    else if (run.exit_code == 0)
      v.output = "the program ended (exit code 0) before the lab wrote its report";
    else
      v.output = ended_by(run.exit_code);
    v.hints = matching_hints(e, nullptr, v.output);
    return v;
  }
  for (const auto& c : report["checks"]) {
    if (!c.is_object()) continue;
    const std::string key = c.value("key", "");
    v.checks.push_back({key, c.value("claim", ""), c.value("evidence", ""), c.value("passed", false),
                        e.judges_learner(key)});
  }
  if (!declared.empty()) {
    if (std::string why = keys_mismatch(v.checks, declared); !why.empty()) {
      v.output = why;
      v.checks.clear();
      return v;
    }
  }
  const bool all = report.value("passed", false) &&
                   std::all_of(v.checks.begin(), v.checks.end(), [](const auto& c) { return c.passed; });
  const int expected = all ? lab::kExitPass : lab::kExitCheckFailed;
  if (run.exit_code != expected) {
    v.output = fmt::format(
        "the lab's report and how the program ended disagree: the report says {}, the "
        "program ended with {}",
        all ? "every check holds" : "a check fails", ended_by(run.exit_code));
    v.checks.clear();
    return v;
  }
  v.kind = all ? Verdict::Passed : Verdict::Failed;
  if (v.kind == Verdict::Failed) v.hints = matching_hints(e, &report, "");
  return v;
}

}  // namespace runner
