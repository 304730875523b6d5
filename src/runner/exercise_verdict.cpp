// The verdict about the learner's code (runner/exercise.h): the checks that judge it, the lab's own runs as
// context, the closing line; and a hint's steps, one more each time the learner asks.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "lab/text.h"
#include "runner/exercise.h"

namespace runner {
namespace {

std::string keys_of(const std::vector<const CheckOutcome*>& checks) {
  std::string s;
  for (const auto* c : checks) s += (s.empty() ? "" : ", ") + c->key;
  return s;
}

const char* const kStepNames[] = {"", "the principle", "the API to use", "the code"};

// The steps shown so far of hint `id` (0 when none, or when the entry holds something else there).
int steps_shown(const nlohmann::json& entry, const std::string& id) {
  const auto steps = entry.find("hint_steps");
  if (steps == entry.end() || !steps->is_object()) return 0;
  const auto n = steps->find(id);
  return n != steps->end() && n->is_number_integer() ? std::clamp(n->get<int>(), 0, 3) : 0;
}

void set_steps_shown(nlohmann::json& entry, const std::string& id, int steps) {
  if (!entry["hint_steps"].is_object()) entry["hint_steps"] = nlohmann::json::object();
  const int before = steps_shown(entry, id);
  if (steps <= before) return;
  entry["hint_steps"][id] = steps;
  // "hints" counts the hint steps the learner has seen, each once.
  const int seen = entry.value("hints", 0) + steps - before;
  entry["hints"] = seen;
}

}  // namespace

void print_checks(std::ostream& out, const ExerciseInfo& e, const Verdict& v, bool color) {
  const lab::Style style{color};
  // Laid out to the terminal's width, as the labs' reports are; the colour codes go on after wrapping.
  const size_t width = lab::terminal_width();
  auto put = [&](const std::string& text, const std::string& first, const std::string& rest) {
    for (const auto& line : lab::wrap_lines(text, width, first, rest)) out << line << "\n";
  };
  for (const CheckOutcome& c : v.checks) {
    if (!c.learner) continue;
    const auto lines = lab::wrap_lines(c.key + ": " + c.claim, width, "  PASS  ", "        ");
    for (size_t i = 0; i < lines.size(); ++i)
      out << (i == 0 ? "  " + (c.passed ? style.green("PASS") : style.red("FAIL")) + lines[i].substr(6)
                     : lines[i])
          << "\n";
    put(c.evidence, "        ", "        ");
  }
  // The lab's own runs judge nothing of the learner's: named as context, never marked PASS. One that did not
  // hold with this file (its code outside what the exercise asks for was changed) is shown with its evidence.
  std::vector<const CheckOutcome*> held;
  for (const CheckOutcome& c : v.checks)
    if (!c.learner && c.passed) held.push_back(&c);
  if (!held.empty())
    for (const auto& line : lab::wrap_lines("the lab's own runs, context that does not judge your code: " +
                                                keys_of(held) + " as the lab shows them",
                                            width, "  ", "    "))
      out << style.dim(line) << "\n";
  for (const CheckOutcome* c : v.lab_runs_failed()) {
    put("the lab's own run " + c->key + " did not hold with your file (" + c->claim +
            "): the lab runs code of your file there to show the problem or its reference, and with your "
            "file it no longer does",
        "  " + style.red("FAIL") + "  ", "        ");
    put(c->evidence, "        ", "        ");
  }
  bool more = false;
  for (const ExerciseHint* h : v.hints) {
    put(h->text, "  hint: ", "        ");
    more |= hint_steps(*h) > 1;
  }
  if (more) out << style.dim(fmt::format("        (amp-lab hint {} shows the next step)", e.id)) << "\n";
}

std::string all_hold(int judged) {
  return judged == 1 ? "its one check holds" : fmt::format("all {} checks hold", judged);
}

std::string verdict_line(const ExerciseInfo& e, const Verdict& v) {
  const std::string timing = fmt::format("built in {:.1f} s, checked in {:.1f} s", v.build_s, v.run_s);
  if (v.kind == Verdict::Passed)
    return fmt::format("exercise {} done: {} for your code ({})", e.id, all_hold(v.judged()), timing);
  if (v.kind == Verdict::LabError)
    return fmt::format("not yet: the lab could not finish with your code ({})", timing);
  const auto lab_failed = v.lab_runs_failed();
  if (v.held() == v.judged() && !lab_failed.empty())
    return fmt::format("not yet: your code: {}, but the lab's own {} did not ({})", all_hold(v.judged()),
                       keys_of(lab_failed), timing);
  return fmt::format("not yet: your code: {} of {} checks hold ({})", v.held(), v.judged(), timing);
}

void record_verdict_hints(nlohmann::json& entry, const Verdict& v) {
  nlohmann::json ids = nlohmann::json::array();
  for (const ExerciseHint* h : v.hints) {
    ids.push_back(h->id);
    set_steps_shown(entry, h->id, 1);
  }
  entry["last_hints"] = ids;
}

std::optional<HintStep> next_hint_step(const ExerciseInfo& e, const nlohmann::json& entry) {
  const auto last = entry.find("last_hints");
  if (last == entry.end() || !last->is_array()) return std::nullopt;
  for (const auto& id : *last) {
    if (!id.is_string()) continue;
    const auto h = std::find_if(e.hints.begin(), e.hints.end(), [&](const auto& x) { return x.id == id; });
    if (h == e.hints.end()) continue;  // a hint exercises.yaml no longer has
    const int next = steps_shown(entry, h->id) + 1;
    if (next <= hint_steps(*h)) return HintStep{&*h, next};
  }
  return std::nullopt;
}

void record_hint_step(nlohmann::json& entry, const HintStep& step) {
  set_steps_shown(entry, step.hint->id, step.step);
}

std::string render_hint_step(const ExerciseInfo& e, const HintStep& step, size_t width) {
  const ExerciseHint& h = *step.hint;
  const int steps = hint_steps(h);
  const std::string what = h.check.empty() ? "the error the lab stopped with" : "check " + h.check;
  std::string out = fmt::format("exercise {}, {} ({}), step {} of {}: {}\n", e.id, what, h.id, step.step,
                                steps, kStepNames[step.step]);
  const std::string& text = hint_step(h, step.step);
  // The code step keeps its lines as written; the others are prose, wrapped.
  size_t b = 0;
  while (b <= text.size()) {
    const size_t end = std::min(text.find('\n', b), text.size());
    const std::string line = text.substr(b, end - b);
    if (step.step == 3 || !width)
      out += "    " + line + "\n";
    else
      for (const auto& l : lab::wrap_lines(line, width, "    ", "    ")) out += l + "\n";
    b = end + 1;
  }
  if (step.step < steps) out += fmt::format("(amp-lab hint {} again: {})\n", e.id, kStepNames[step.step + 1]);
  return out;
}

}  // namespace runner
