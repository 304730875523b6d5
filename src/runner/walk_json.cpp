// The walk's --json document: the flags, every question's outcome and its lab's whole report.
#include <nlohmann/json.hpp>

#include "runner/walk_state.h"

namespace runner {
namespace {

const char* outcome_name(Asked o) {
  static const char* names[] = {"right", "wrong", "skipped", "not asked"};
  return names[static_cast<int>(o)];
}

const char* lab_status(const Answered& a) {
  if (!a.ran) return "not run";
  switch (a.lab.kind) {
    case LabOutcome::Kind::Report:
      return a.lab.report->passed() ? "passed" : "checks failed";
    case LabOutcome::Kind::Interrupted:
      return "interrupted";
    case LabOutcome::Kind::Crashed:
      return "crashed";
    case LabOutcome::Kind::NotBuilt:
      return "not built";
    default:
      return "failed";
  }
}

nlohmann::json question_json(const Answered& a, bool reveal) {
  const Question& q = *a.question;
  nlohmann::json j = {{"number", q.number}, {"id", q.id},
                      {"lab", q.lab},       {"outcome", outcome_name(a.outcome)},
                      {"hints", a.hints},   {"lab_status", lab_status(a)}};
  // Options by the letter shown ("answer", "correct", "why_not") and by id, their letter in quiz.yaml
  // ("answer_id", "correct_id", "order": the ids as shown).
  j["attempt"] = a.attempt;
  j["order"] = order_letters(a.order);
  // As in the summary: the answer of a question not answered stays unsaid.
  if (reveal || a.outcome == Asked::Right || a.outcome == Asked::Wrong) {
    j["correct"] = std::string(1, a.shown(q.answer));
    j["correct_id"] = std::string(1, letter(q.answer));
  }
  if (a.chosen >= 0) {
    j["answer"] = std::string(1, a.shown(a.chosen));
    j["answer_id"] = std::string(1, letter(a.chosen));
  }
  if (a.reported()) {
    j["report"] = a.lab.report->to_json();
    if (!a.lab.report->dtypes().empty()) j["dtypes"] = a.lab.report->dtypes();
    if (j.contains("correct")) {
      const auto values = values_of(a);
      j["explanation"] = fill(q.explanation, values);
      for (const auto& [index, why] : q.why_not)
        j["why_not"][std::string(1, a.shown(index))] = fill(why, values);
    }
  } else if (a.ran) {
    j["lab_error"] = a.lab.message;
  }
  return j;
}

}  // namespace

std::string walk_json(const std::vector<Answered>& walked, const WalkOptions& options, bool completed) {
  const Tally t = tally(walked);
  const lab::ContextArgs& c = options.context;
  nlohmann::json j;
  j["torch_version"] = AMP_LAB_TORCH_VERSION;
  if (!options.track.empty()) j["track"] = options.track;
  j["device"] = c.device;
  j["dtype"] = c.dtype ? nlohmann::json(*c.dtype) : nlohmann::json(nullptr);  // null: each lab's own
  j["seed"] = c.seed;
  j["quick"] = c.quick;
  j["order"] = options.file_order || !options.order_seed ? "file" : "drawn";
  if (!options.file_order && options.order_seed) j["order_seed"] = *options.order_seed;
  j["completed"] = completed;
  j["score"] = t.right;
  j["questions"] = nlohmann::json::array();
  for (const auto& a : walked) j["questions"].push_back(question_json(a, options.reveal));
  j["all_checks_passed"] = t.all_passed() && t.labs_reported > 0;
  // Quiz text is UTF-8 (checked on load); replace keeps the file whole should a lab's text not be.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace runner
