// The exercises (exercises.yaml, read once) and reading a run's report into a verdict (runner/exercise.h).
#include "runner/exercise.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>

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
    if (!h.evidence.empty() && c.value("evidence", "").find(h.evidence) == std::string::npos) return false;
    if (h.observation.empty()) return true;
    const auto& obs = report["observations"];
    if (!obs.is_object() || !obs.contains(h.observation)) return false;
    const double v = obs[h.observation].value("value", 0.0);
    return v >= h.lo && v <= h.hi;
  }
  return false;
}

}  // namespace

const std::vector<ExerciseInfo>& exercises() {
  static const std::vector<ExerciseInfo> all = load_exercises(exercises_path(), catalog_lab);
  return all;
}

const ExerciseInfo* find_exercise(const std::string& name) {
  const std::string id = digits_of(name);
  for (const auto& e : exercises())
    if (e.id == id || e.stem == name || e.lab == name) return &e;
  return nullptr;
}

int Verdict::held() const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [](const auto& c) { return c.passed; }));
}

// One hint per failed check at most: the first that matches, the most specific being listed first.
std::vector<const ExerciseHint*> matching_hints(const ExerciseInfo& e, const nlohmann::json* report,
                                                const std::string& error) {
  std::vector<const ExerciseHint*> out;
  std::vector<std::string> used;
  for (const ExerciseHint& h : e.hints) {
    const bool match =
        report ? hint_matches(h, *report) : !h.error.empty() && error.find(h.error) != std::string::npos;
    if (!match || std::find(used.begin(), used.end(), h.check) != used.end()) continue;
    used.push_back(h.check);
    out.push_back(&h);
  }
  return out;
}

Verdict verdict_from_run(const ExerciseInfo& e, const std::string& json_text, int exit_code,
                         const std::string& stderr_text) {
  Verdict v;
  const auto report = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!report.is_object() || !report.contains("checks") || !report["checks"].is_array()) {
    v.kind = Verdict::LabError;
    // The lab's own one-line message ("lab09_...: lab failed: ..."), without the device notice before it.
    std::string last;
    for (size_t b = 0; b < stderr_text.size();) {
      const size_t end = std::min(stderr_text.find('\n', b), stderr_text.size());
      if (end > b) last = stderr_text.substr(b, end - b);
      b = end + 1;
    }
    v.output = last.empty() ? ended_by(exit_code) : last;
    v.hints = matching_hints(e, nullptr, v.output);
    return v;
  }
  for (const auto& c : report["checks"])
    v.checks.push_back(
        {c.value("key", ""), c.value("claim", ""), c.value("evidence", ""), c.value("passed", false)});
  v.kind = report.value("passed", false) && v.held() == static_cast<int>(v.checks.size()) ? Verdict::Passed
                                                                                          : Verdict::Failed;
  if (v.kind == Verdict::Failed) v.hints = matching_hints(e, &report, "");
  return v;
}

}  // namespace runner
