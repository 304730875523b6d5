// What the walk prints: the header, each lab's part before the question, the answer and its explanation,
// and the summary.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "runner/glossary.h"
#include "runner/walk_state.h"

namespace runner {
namespace {

std::string plural(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string numbers(const std::vector<int>& list) {
  std::string s;
  for (int n : list) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

}  // namespace

Tally tally(const std::vector<Answered>& walked) {
  Tally t;
  for (const auto& a : walked) {
    t.right += a.outcome == Asked::Right;
    t.wrong += a.outcome == Asked::Wrong;
    t.skipped += a.outcome == Asked::Skipped;
    t.not_reached += a.outcome == Asked::NotAsked;
    if (a.reported()) {
      ++t.labs_reported;
      t.labs_passed += a.lab.report->passed();
    }
    t.labs_failed += a.lab_failed();
  }
  return t;
}

std::map<std::string, std::string> values_of(const Answered& a) {
  std::map<std::string, std::string> values;
  if (a.reported()) {
    for (const auto& o : a.lab.report->observations()) {
      values[o.key] = o.text;
      values[o.key + ":value"] = o.unit == "%"   ? lab::percent(o.value / 100.0, 2)
                                 : o.unit == "x" ? fmt::format("{:.{}f}x", o.value, o.value >= 100 ? 0 : 2)
                                                 : lab::num(o.value, 3) + o.unit;
    }
  }
  std::string templates = a.question->explanation + a.question->hint;
  for (const auto& [index, why] : a.question->why_not) templates += why;
  for (const auto& name : placeholders(templates))
    values.emplace(name, "(not measured: the lab did not run)");
  return values;
}

void print_header(const Quiz& quiz, const WalkOptions& options, size_t questions, std::ostream& out,
                  const lab::Style& style) {
  out << style.bold(quiz.title) << "\n";
  // The default track goes unannounced, so `amp-lab quiz` reads as it always has.
  if (!options.track.empty() && !quiz.tracks.empty() && options.track != quiz.tracks.front().id) {
    std::string title = "every question of every track";
    for (const auto& t : quiz.tracks)
      if (t.id == options.track) title = t.title;
    out << fmt::format("Track {}: {} ({})\n", options.track, title,
                       plural(questions, "question", "questions"));
  }
  if (!quiz.intro.empty() && !options.reveal) out << lab::paragraph("", quiz.intro, options.width, 0) << "\n";
  const lab::ContextArgs& c = options.context;
  // No global dtype: each lab states the types it uses in its own header (labs 01, 02 and 09-12 run fp16).
  out << style.dim(fmt::format("device {} · LibTorch {} · seed {}{}{}{}", c.device, AMP_LAB_TORCH_VERSION,
                               c.seed,
                               c.dtype ? " · --dtype " + *c.dtype + " where a lab lets you choose" : "",
                               c.quick ? " · quick mode" : "", c.flip ? " · FLIPPED" : ""))
      << "\n";
}

void print_banner(const Answered& a, size_t index, size_t count, std::ostream& out, const lab::Style& style) {
  out << "\n"
      << style.bold(fmt::format("━━ {}/{} · lab {} · {} ━━", index + 1, count, a.question->lab,
                                a.decl ? a.decl->source() : "?"))
      << "\n"
      << std::flush;  // a reader of a pipe sees which lab runs
}

std::string print_lab(const Answered& a, const WalkOptions& options, std::ostream& out,
                      const lab::Style& style, std::set<std::string>& glossed, size_t reserved) {
  if (!a.reported()) {
    const bool stopped = a.lab.kind == LabOutcome::Kind::Interrupted;
    out << (stopped ? style.yellow("Interrupted: " + a.lab.message)
                    : style.red("The lab failed: " + a.lab.message))
        << "\n";
    return "";
  }
  // The lab's own types next to its device, where the old banner had one global dtype.
  lab::Report report = *a.lab.report;
  if (!a.lab.dtypes.empty()) {
    std::string header = report.header();
    const auto seed = header.find(" · seed ");
    header.insert(seed == std::string::npos ? header.size() : seed, " · " + a.lab.dtypes);
    report.set_header(header);
  }
  // Observe first: what the lab measured, under its neutral heading. The checks state the answer, so they
  // wait until the learner has answered (--reveal shows everything at once).
  const lab::Part part = options.reveal ? lab::Part::All : lab::Part::Measured;
  const std::string heading = options.reveal ? "" : a.decl->heading;
  const std::string shown =
      report.render_text({.color = options.color, .part = part, .heading = heading, .width = options.width});
  out << shown;
  if (!options.glosses) return "";
  // Neutral definitions of the terms this walk shows for the first time, under what was measured, as many
  // as the screen has room for; the others after the answer.
  const auto fresh = new_terms(shown, glossed);
  size_t used =
      2 + reserved + static_cast<size_t>(std::count(shown.begin(), shown.end(), '\n'));  // 2: the banner
  std::string now, later;
  for (const auto* term : fresh) {
    const std::string gloss = format_glosses({term}, options.width);
    const size_t lines = static_cast<size_t>(std::count(gloss.begin(), gloss.end(), '\n'));
    const bool fits = later.empty() && used + lines + (now.empty() ? 1 : 0) <= options.rows;
    (fits ? now : later) += gloss;
    if (fits) used += lines + (now.size() == gloss.size() ? 1 : 0);
  }
  if (!now.empty()) out << style.dim("Terms:") << "\n" << now;
  return later.empty() ? "" : style.dim("Terms:") + "\n" + later;
}

void print_question(const Question& q, std::ostream& out, const lab::Style& style, bool mark_answer,
                    size_t width) {
  out << "\n";
  for (const auto& line : lab::wrap_lines(fmt::format("Q{}. {}", q.number, q.prompt), width, "", "    "))
    out << style.bold(line) << "\n";
  for (size_t k = 0; k < q.options.size(); ++k) {
    const bool correct = mark_answer && static_cast<int>(k) == q.answer;
    auto lines = lab::wrap_lines(fmt::format("{}) {}", letter(static_cast<int>(k)), q.options[k]), width,
                                 "  ", "     ");
    // The key's marker stays whole: on the option's last line when it fits, else on a line of its own.
    if (correct && lines.back().size() + 12 <= width)
      lines.back() += "   <- answer";
    else if (correct)
      lines.push_back("     <- answer");
    for (const auto& line : lines) out << (correct ? style.green(line) : line) << "\n";
  }
}

void print_hint(const Answered& a, std::ostream& out, const lab::Style& style, size_t width) {
  out << style.dim(lab::paragraph("Hint:", fill(a.question->hint, values_of(a)), width, /*hang=*/6)) << "\n";
}

namespace {

// The correct option and why; then why each wrong one is wrong, the learner's own first, marked.
void print_explanation(const Answered& a, std::ostream& out, const lab::Style& style, size_t width) {
  const Question& q = *a.question;
  const auto values = values_of(a);
  for (const auto& line : lab::wrap_lines(
           fmt::format("The answer is {}) {}", letter(q.answer), q.options[q.answer]), width, "", "     "))
    out << style.bold(line) << "\n";
  out << lab::paragraph("Why:", fill(q.explanation, values), width) << "\n";
  std::vector<int> order;
  if (a.chosen >= 0 && a.chosen != q.answer) order.push_back(a.chosen);
  for (const auto& [index, why] : q.why_not)
    if (index != a.chosen) order.push_back(index);
  for (int index : order) {
    const bool theirs = index == a.chosen;
    const std::string label =
        fmt::format("Not {}) {}{}", letter(index), q.options[index], theirs ? " (your answer)" : "");
    const auto why = q.why_not.find(index);
    const std::string wrapped = why == q.why_not.end()
                                    ? lab::paragraph(label + ".", "", width)
                                    : lab::paragraph(label + ":", fill(why->second, values), width);
    out << (theirs ? style.yellow(wrapped) : wrapped) << "\n";
  }
}

void print_checks(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style) {
  if (!a.reported()) return;
  const lab::Report& report = *a.lab.report;
  const std::string details =
      report.render_text({.color = options.color, .part = lab::Part::Details, .width = options.width});
  if (!details.empty()) out << details;
  out << "\n"
      << report.render_text({.color = options.color, .part = lab::Part::Verdict, .width = options.width});
  if (!report.passed())
    out << style.yellow(fmt::format(
               "Note: only {}/{} of this lab's checks held on this machine; read its numbers with care.",
               report.checks_passed(), report.checks().size()))
        << "\n";
}

}  // namespace

void print_answer(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style) {
  if (a.outcome == Asked::Skipped)
    out << style.yellow("Skipped.") << "\n";
  else if (a.outcome == Asked::Right)
    out << style.green("Right!") << "\n";
  else
    out << style.red(fmt::format("Not quite: you chose {}.", letter(a.chosen))) << "\n";
  print_explanation(a, out, style, options.width);
  print_checks(a, options, out, style);
}

void print_key(const Answered& a, std::ostream& out, const lab::Style& style, size_t width) {
  print_explanation(a, out, style, width);
}

namespace {

std::string lab_cell(const Answered& a) {
  if (!a.ran) return "not run";
  switch (a.lab.kind) {
    case LabOutcome::Kind::Report:
      return fmt::format("{}/{} {}", a.lab.report->checks_passed(), a.lab.report->checks().size(),
                         a.lab.report->passed() ? "pass" : "FAIL");
    case LabOutcome::Kind::Interrupted:
      return "interrupted";
    case LabOutcome::Kind::Crashed:
      return "lab crashed";
    case LabOutcome::Kind::NotBuilt:
      return "not built";
    default:
      return "lab failed";
  }
}

// The answer of a question is shown only once the learner answered it (or asked for the key).
std::vector<std::string> summary_row(const Answered& a, bool reveal) {
  const bool answered = a.outcome == Asked::Right || a.outcome == Asked::Wrong;
  std::string yours =
      a.outcome == Asked::Skipped ? "skipped"
      : answered ? fmt::format("{} ({})", letter(a.chosen), a.outcome == Asked::Right ? "right" : "wrong")
                 : "-";
  const std::string correct = answered || reveal ? std::string(1, letter(a.question->answer)) : "-";
  return {std::to_string(a.question->number), a.question->id, reveal ? "-" : yours, correct, lab_cell(a)};
}

void print_checks_line(const Tally& t, std::ostream& out) {
  if (t.labs_reported == 0 && t.labs_failed == 0) {
    out << "Lab checks: no lab ran to the end\n";
  } else if (t.all_passed()) {
    out << (t.labs_reported == 1 ? std::string("Lab checks: held in the 1 lab run\n")
                                 : fmt::format("Lab checks: held in all {} labs run\n", t.labs_reported));
  } else {
    out << fmt::format(
        "Lab checks: did NOT all hold: {} of {} passed{}\n", t.labs_passed,
        plural(static_cast<size_t>(t.labs_reported), "lab that reported", "labs that reported"),
        t.labs_failed
            ? fmt::format("; {} failed to run", plural(static_cast<size_t>(t.labs_failed), "lab", "labs"))
            : "");
  }
}

void print_next_steps(const std::vector<Answered>& walked, const WalkOptions& options, std::ostream& out,
                      const lab::Style& style) {
  std::vector<int> missed, later;
  for (const auto& a : walked) {
    if (a.outcome == Asked::Wrong || a.outcome == Asked::Skipped) missed.push_back(a.question->number);
    if (a.outcome == Asked::NotAsked) later.push_back(a.question->number);
  }
  if (!missed.empty())
    out << fmt::format("Retry the {} you missed or skipped: ",
                       missed.size() == 1 ? "one" : std::to_string(missed.size()))
        << style.bold(options.command + " --only " + numbers(missed)) << "\n";
  // --only names exactly the questions of this walk not reached; --resume (saved progress) would also
  // take those of the track this walk did not choose.
  if (!later.empty())
    out << "Go on where you stopped: " << style.bold(options.command + " --only " + numbers(later)) << "\n";
  if (options.progress) {
    const std::string saved = fmt::format(
        "Progress saved in {}: amp-lab progress shows it, {} --resume goes on with the questions never "
        "answered.",
        lab::escape(options.progress->file().string()), options.command);
    out << style.dim(options.width ? lab::wrap(saved, options.width) : saved) << "\n";
  }
}

}  // namespace

void print_summary(const std::vector<Answered>& walked, const WalkOptions& options,
                   const std::string& stop_reason, std::ostream& out, const lab::Style& style) {
  if (!stop_reason.empty()) out << "\n" << style.yellow("Stopped (" + stop_reason + ").") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : walked) rows.push_back(summary_row(a, options.reveal));
  out << "\n" << style.bold("Summary") << "\n";
  for (const auto& line : lab::format_table({"#", "question", "your answer", "correct", "lab checks"}, rows,
                                            options.width > 2 ? options.width - 2 : 0))
    out << "  " << line << "\n";
  const Tally t = tally(walked);
  if (!options.reveal)
    out << style.bold(fmt::format("Score: {}/{} right", t.right, walked.size()))
        << fmt::format(" ({} wrong, {} skipped{})", t.wrong, t.skipped,
                       stop_reason.empty() ? "" : fmt::format(", {} not reached", t.not_reached))
        << "\n";
  print_checks_line(t, out);
  if (!options.reveal) print_next_steps(walked, options, out, style);
}

}  // namespace runner
