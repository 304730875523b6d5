// What the walk prints: the header, each lab's part before the question, the answer and its explanation,
// and the summary.
#include <algorithm>
#include <iterator>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "runner/glossary.h"
#include "runner/walk_state.h"
#include "runner/walk_terms.h"

namespace runner {
namespace {

std::string plural(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "Terms:" and a gloss a line; "" for no terms.
std::string terms_block(const std::vector<const Term*>& terms, size_t width, const lab::Style& style) {
  return terms.empty() ? "" : style.dim("Terms:") + "\n" + format_glosses(terms, width);
}

// The glossary's terms that `text` uses; none when the walk glosses nothing.
std::vector<const Term*> terms_in(const WalkOptions& options, const std::string& text) {
  return options.glossary ? options.glossary->terms_in(text) : std::vector<const Term*>{};
}

// "amp-lab" or "scripts/amp-lab": the program part of the walk's own command ("amp-lab quiz --track x").
std::string command_of(const WalkOptions& options) {
  const auto quiz = options.command.rfind(" quiz");
  return quiz == std::string::npos ? options.command : options.command.substr(0, quiz);
}

std::string numbers(const std::vector<int>& list) {
  std::string s;
  for (int n : list) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

size_t line_count(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// `text` without its blank lines (nothing but blanks and colour codes).
std::string without_blank_lines(const std::string& text) {
  std::string kept;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    bool blank = true;
    for (size_t k = 0; k < line.size() && blank; ++k)
      if (line[k] == '\x1b')
        k = std::min(line.find('m', k), line.size());
      else
        blank = line[k] == ' ';
    if (!blank) kept += line + "\n";
  }
  return kept;
}

// `report` without the notes above its first section (the set-up: the model, the types, the machine).
lab::Report without_set_up_notes(const lab::Report& report) {
  nlohmann::json j = report.to_json();
  auto& blocks = j["blocks"];
  while (!blocks.empty() && blocks.front().contains("note")) blocks.erase(blocks.begin());
  return lab::Report::from_json(j);
}

}  // namespace

Tally tally(const std::vector<Answered>& walked) {
  Tally t;
  for (const auto& a : walked) {
    t.right += a.outcome == Asked::Right;
    t.wrong += a.outcome == Asked::Wrong;
    t.skipped += a.outcome == Asked::Skipped;
    t.left += a.outcome == Asked::NotAsked && a.prompted;
    t.not_reached += a.outcome == Asked::NotAsked && !a.prompted;
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
  const size_t width = options.width;
  for (const auto& line : lab::wrap_lines(quiz.title, width)) out << style.bold(line) << "\n";
  // The default track goes unannounced, so `amp-lab quiz` reads as it always has.
  if (!options.track.empty() && !quiz.tracks.empty() && options.track != quiz.tracks.front().id) {
    std::string title = "every question of every track";
    for (const auto& t : quiz.tracks)
      if (t.id == options.track) title = t.title;
    out << lab::paragraph("",
                          fmt::format("Track {}: {} ({})", options.track, title,
                                      plural(questions, "question", "questions")),
                          width, 2)
        << "\n";
  }
  if (!quiz.intro.empty() && !options.reveal) out << lab::paragraph("", quiz.intro, width, 0) << "\n";
  const lab::ContextArgs& c = options.context;
  // No global dtype: each lab states the types it uses in its own header (labs 01, 02 and 09-12 run fp16).
  const std::string context =
      fmt::format("device {} · LibTorch {} · seed {}{}{}{}", c.device, AMP_LAB_TORCH_VERSION, c.seed,
                  c.dtype ? " · --dtype " + *c.dtype + " where a lab lets you choose" : "",
                  c.quick ? " · quick mode" : "", c.flip ? " · FLIPPED" : "");
  for (const auto& line : lab::wrap_lines(context, width, "", "  ")) out << style.dim(line) << "\n";
}

namespace {

std::string banner_text(const Answered& a, size_t index, size_t count) {
  return fmt::format("{}/{} · lab {} · {}", index + 1, count, a.question->lab,
                     a.decl ? a.decl->folder() + "/" : "?");
}

// The rows print_banner() takes below its blank line, for a walk of at most 99 questions.
size_t banner_rows(const Answered& a, size_t width) {
  const std::string text = banner_text(a, 98, 99);
  return !width || lab::display_width(text) + 6 <= width ? 1
                                                         : 1 + lab::wrap_lines(text, width, "", "  ").size();
}

}  // namespace

void print_banner(const Answered& a, size_t index, size_t count, std::ostream& out, const lab::Style& style,
                  size_t width, bool blank_line) {
  const std::string text = banner_text(a, index, count);
  // "━━ text ━━" on one line when it fits, else the text wrapped under a rule as wide as the screen.
  if (blank_line) out << "\n";
  if (!width || lab::display_width(text) + 6 <= width)
    out << style.bold("━━ " + text + " ━━") << "\n";
  else {
    std::string rule;
    for (size_t k = 0; k < width; ++k) rule += "━";
    out << style.bold(rule) << "\n";
    for (const auto& line : lab::wrap_lines(text, width, "", "  ")) out << style.bold(line) << "\n";
  }
  out << std::flush;  // a reader of a pipe sees which lab runs
}

namespace {

// The lab's header line as the walk shows it: the banner already names the lab and its file, so the header
// keeps the device, the lab's own types (where the old banner had one global dtype), the seed and mode, and
// the run time, on one line.
std::string lab_header(const Answered& a, const WalkOptions& options) {
  std::string header = a.lab.report->header();
  if (!options.reveal) {
    const auto device = header.find("device ");
    if (device != std::string::npos) header.erase(0, device);
  }
  if (!a.lab.report->dtypes().empty()) {
    const auto seed = header.find(" · seed ");
    header.insert(seed == std::string::npos ? header.size() : seed, " · " + a.lab.report->dtypes());
  }
  if (!options.reveal) header += " · measured in " + lab::num(a.lab.report->elapsed(), 3) + " s";
  return header;
}

// Neutral definitions of the terms not shown before (runner/walk_terms.h), all before the question, on the
// rows the screen has beside the banner, the question and its prompt (`reserved`). `measured` holds the
// lab's measured part in ever shorter forms. What the learner needs least before answering goes first: the
// lab's header line (its device, seed and run time, most of them in the walk's header), then the glosses
// of the lab's own terms (named for the t key), then the blank lines between the lab's sections, then that
// line of names, then the lab's notes on its set-up above its first section, then the glosses of terms of a
// single option that the lab's text shows (named for the t key, then not). The prompt's terms and those of
// two options or more are always glossed. Returns the form of the measured part to show, and adds the terms
// glossed to `glossed`.
size_t fit_screen(const Answered& a, const WalkOptions& options, const std::vector<std::string>& measured,
                  std::set<std::string>& glossed, size_t reserved, const lab::Style& style,
                  ScreenGlosses& glosses) {
  const size_t used = banner_rows(a, options.width) + reserved;
  const size_t rows = options.rows > used ? options.rows - used : 0;
  struct Step {
    size_t measured;  // index into `measured`
    bool all;         // every term glossed
    bool name_rest;   // the terms not glossed named on a line
    bool shown_own;   // a term of one option that the lab's text shows is glossed as the question's own
  };
  size_t chosen = 0;
  for (const Step step :
       {Step{0, true, true, true}, Step{1, true, true, true}, Step{1, false, true, true},
        Step{2, false, true, true}, Step{2, false, false, true}, Step{3, false, true, true},
        Step{3, false, false, true}, Step{3, false, true, false}, Step{3, false, false, false}}) {
    chosen = std::min(step.measured, measured.size() - 1);
    const size_t lab_rows = line_count(measured[chosen]);
    glosses =
        glosses_before_prompt(*options.glossary, *a.question, measured[chosen], glossed, options.width,
                              rows > lab_rows ? rows - lab_rows : 0, step.name_rest, style, step.shown_own);
    if (lab_rows + glosses.rows <= rows && (glosses.all || !step.all)) break;
  }
  glossed.insert(glosses.glossed.begin(), glosses.glossed.end());
  return chosen;
}

}  // namespace

std::string print_lab(const Answered& a, const WalkOptions& options, std::ostream& out,
                      const lab::Style& style, std::set<std::string>& glossed, const std::string& also_shown,
                      size_t reserved) {
  if (!a.reported()) {
    const bool stopped = a.lab.kind == LabOutcome::Kind::Interrupted;
    out << lab::paragraph("", (stopped ? "Interrupted: " : "The lab failed: ") + a.lab.message, options.width,
                          2)
        << "\n";
    return "";
  }
  // Observe first: what the lab measured, under its neutral heading. The checks state the answer, so they
  // wait until the learner has answered (--reveal shows everything at once).
  lab::Report report = *a.lab.report;
  const auto render = [&](const std::string& header) {
    report.set_header(header);
    return report.render_text({.color = options.color,
                               .part = options.reveal ? lab::Part::All : lab::Part::Measured,
                               .heading = options.reveal ? "" : a.decl->heading,
                               .width = options.width,
                               .elapsed_line = options.reveal});
  };
  const std::string shown = render(lab_header(a, options));
  if (!options.glossary) {
    out << shown;
    return "";
  }
  std::vector<std::string> measured = {shown};  // --reveal shows everything
  if (!options.reveal) {
    measured = {shown, render(""), without_blank_lines(render(""))};
    report = without_set_up_notes(report);
    measured.push_back(without_blank_lines(render("")));
  }
  ScreenGlosses glosses;
  const std::string& lab_part = measured[fit_screen(a, options, measured, glossed, reserved, style, glosses)];
  // Under the measured part when everything fits, else above it, so that what was measured and the
  // question stay on screen together (the terms scroll up first).
  const bool fits =
      banner_rows(a, options.width) + reserved + line_count(lab_part) + glosses.rows <= options.rows;
  if (!fits) out << glosses.text;
  out << lab_part;
  if (fits) out << glosses.text;
  // For the t key: every term of the question's screen.
  return terms_block(question_terms(*options.glossary, *a.question, also_shown + "\n" + shown), options.width,
                     style);
}

void print_question(const Question& q, const OptionOrder& order, std::ostream& out, const lab::Style& style,
                    bool mark_answer, size_t width) {
  out << "\n";
  for (const auto& line : lab::wrap_lines(fmt::format("Q{}. {}", q.number, q.prompt), width, "", "    "))
    out << style.bold(line) << "\n";
  for (size_t k = 0; k < order.size(); ++k) {  // k: the position shown; order[k]: the option's id
    const int id = order[k];
    const bool correct = mark_answer && id == q.answer;
    auto lines = lab::wrap_lines(fmt::format("{}) {}", letter(static_cast<int>(k)), q.options[id]), width,
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

// "Right!", "Not quite: you chose b." or "Skipped.", then the answer on the same line when `with_answer`.
void print_result(const Answered& a, std::ostream& out, const lab::Style& style, size_t width,
                  bool with_answer) {
  const std::string result = a.outcome == Asked::Skipped ? "Skipped."
                             : a.outcome == Asked::Right
                                 ? "Right!"
                                 : fmt::format("Not quite: you chose {}.", a.shown(a.chosen));
  const auto color = [&](const std::string& s) {
    return a.outcome == Asked::Skipped ? style.yellow(s)
           : a.outcome == Asked::Right ? style.green(s)
                                       : style.red(s);
  };
  if (!with_answer) return void(out << color(result) << "\n");
  const Question& q = *a.question;
  const auto lines =
      lab::wrap_lines(fmt::format("{} The answer is {}) {}", result, a.shown(q.answer), q.options[q.answer]),
                      width, "", "     ");
  for (size_t k = 0; k < lines.size(); ++k) {
    const bool lead = k == 0 && lines[k].compare(0, result.size(), result) == 0;  // narrow: it may wrap too
    out << (lead ? color(result) + style.bold(lines[k].substr(result.size())) : style.bold(lines[k])) << "\n";
  }
}

// The answer and why, then the wrong options whose index `shown` accepts (the learner's own first).
template <class Shown>
void print_why(const Answered& a, std::ostream& out, const lab::Style& style, size_t width, bool with_why,
               Shown shown) {
  const Question& q = *a.question;
  const auto values = values_of(a);
  if (with_why) out << lab::paragraph("Why:", fill(q.explanation, values), width) << "\n";
  std::vector<int> order;  // ids: the learner's first, then the others as shown
  if (a.chosen >= 0 && a.chosen != q.answer) order.push_back(a.chosen);
  for (const int index : a.order)
    if (index != a.chosen && q.why_not.count(index)) order.push_back(index);
  for (int index : order) {
    if (!shown(index)) continue;
    const bool theirs = index == a.chosen;
    const std::string label =
        fmt::format("Not {}) {}{}", a.shown(index), q.options[index], theirs ? " (your answer)" : "");
    const auto why = q.why_not.find(index);
    const std::string wrapped = why == q.why_not.end()
                                    ? lab::paragraph(label + ".", "", width)
                                    : lab::paragraph(label + ":", fill(why->second, values), width);
    out << (theirs ? style.yellow(wrapped) : wrapped) << "\n";
  }
}

std::string checks_note(const Answered& a, const lab::Style& style, size_t width) {
  if (!a.reported() || a.lab.report->passed()) return "";
  const lab::Report& report = *a.lab.report;
  return style.yellow(lab::paragraph(
             "Note:",
             fmt::format("only {}/{} of this lab's checks held on this machine; read its numbers with care.",
                         report.checks_passed(), report.checks().size()),
             width, 6)) +
         "\n";
}

// The correct option and why; then why each wrong one is wrong, the learner's own first, marked.
void print_explanation(const Answered& a, std::ostream& out, const lab::Style& style, size_t width) {
  const Question& q = *a.question;
  for (const auto& line : lab::wrap_lines(
           fmt::format("The answer is {}) {}", a.shown(q.answer), q.options[q.answer]), width, "", "     "))
    out << style.bold(line) << "\n";
  print_why(a, out, style, width, true, [](int) { return true; });
}

void print_checks(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style) {
  if (!a.reported()) return;
  const lab::Report& report = *a.lab.report;
  const std::string details =
      report.render_text({.color = options.color, .part = lab::Part::Details, .width = options.width});
  if (!details.empty()) out << details;
  out << "\n"
      << report.render_text({.color = options.color, .part = lab::Part::Verdict, .width = options.width});
  out << checks_note(a, style, options.width);
}

}  // namespace

void print_answer(const Answered& a, const WalkOptions& options, std::ostream& out, const lab::Style& style) {
  print_result(a, out, style, options.width, false);
  print_explanation(a, out, style, options.width);
  print_checks(a, options, out, style);
}

void print_answer_screen(const Answered& a, const WalkOptions& options, std::ostream& out,
                         const lab::Style& style) {
  print_result(a, out, style, options.width, true);
  print_why(a, out, style, options.width, true, [&](int index) { return index == a.chosen; });
  out << checks_note(a, style, options.width);
}

std::vector<AnswerPart> answer_parts(const Answered& a, const WalkOptions& options, const lab::Style& style) {
  std::vector<AnswerPart> parts;
  const size_t width = options.width;
  std::ostringstream others;
  print_why(a, others, style, width, false, [&](int index) { return index != a.chosen; });
  parts.push_back({'o', "other options", others.str()});
  std::string all_text = a.question->prompt + "\n";  // the terms of every screen of the question
  for (const auto& option : a.question->options) all_text += option + "\n";
  all_text += fill(a.question->explanation, values_of(a)) + "\n" + others.str();
  if (a.reported()) {
    const lab::Report& report = *a.lab.report;
    parts.push_back(
        {'d', "details",
         report.render_text({.color = options.color, .part = lab::Part::Details, .width = width})});
    parts.push_back(
        {'c', "checks",
         report.render_text({.color = options.color, .part = lab::Part::Verdict, .width = width}) +
             checks_note(a, style, width)});
    all_text += report.render_text({.part = lab::Part::All, .width = width});
  }
  const auto terms = terms_in(options, all_text);
  if (!terms.empty()) parts.push_back({'t', "terms", terms_block(terms, width, style)});
  std::erase_if(parts,
                [](const AnswerPart& p) { return p.text.find_first_not_of(" \n") == std::string::npos; });
  return parts;
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
      a.outcome == Asked::Skipped                  ? "skipped"
      : a.outcome == Asked::NotAsked && a.prompted ? "not answered"
      : answered ? fmt::format("{} ({})", a.shown(a.chosen), a.outcome == Asked::Right ? "right" : "wrong")
                 : "-";
  const std::string correct = answered || reveal ? std::string(1, a.shown(a.question->answer)) : "-";
  return {std::to_string(a.question->number), a.question->id, reveal ? "-" : yours, correct, lab_cell(a)};
}

std::string checks_line(const Tally& t) {
  if (t.labs_reported == 0 && t.labs_failed == 0) return "Lab checks: no lab ran to the end";
  if (t.all_passed())
    return t.labs_reported == 1 ? std::string("Lab checks: held in the 1 lab run")
                                : fmt::format("Lab checks: held in all {} labs run", t.labs_reported);
  return fmt::format("Lab checks: did NOT all hold: {} of {} passed{}", t.labs_passed,
                     plural(static_cast<size_t>(t.labs_reported), "lab that reported", "labs that reported"),
                     t.labs_failed ? fmt::format("; {} failed to run",
                                                 plural(static_cast<size_t>(t.labs_failed), "lab", "labs"))
                                   : "");
}

// A line of advice, wrapped to the screen with the command kept whole where it fits.
void print_advice(const std::string& lead, const std::string& command, const WalkOptions& options,
                  std::ostream& out, const lab::Style& style) {
  const auto lines = lab::wrap_lines(lead + " " + command, options.width, "", "  ");
  if (lines.size() == 1) return void(out << lead << " " << style.bold(command) << "\n");
  for (const auto& line : lab::wrap_lines(lead, options.width, "", "  ")) out << line << "\n";
  for (const auto& line : lab::wrap_lines(command, options.width, "  ", "    "))
    out << style.bold(line) << "\n";
}

void print_next_steps(const std::vector<Answered>& walked, const Quiz& track, const WalkOptions& options,
                      std::ostream& out, const lab::Style& style) {
  std::vector<int> missed, later;
  for (const auto& a : walked) {
    if (a.outcome == Asked::Wrong || a.outcome == Asked::Skipped) missed.push_back(a.question->number);
    if (a.outcome == Asked::NotAsked) later.push_back(a.question->number);
  }
  // With saved progress, every question of the track last answered wrong or skipped (a walk of --resume or
  // --only is part of the track), this walk's answers included.
  if (options.progress) {
    const std::vector<int> saved = retry_questions(options.progress->load(), track);
    std::vector<int> both;
    std::set_union(saved.begin(), saved.end(), missed.begin(), missed.end(), std::back_inserter(both));
    // A question answered right in this walk is not to retry, whatever was saved before.
    std::erase_if(both, [&](int n) {
      return std::any_of(walked.begin(), walked.end(), [&](const Answered& a) {
        return a.question->number == n && a.outcome == Asked::Right;
      });
    });
    missed = both;
  }
  if (!missed.empty())
    print_advice(fmt::format("Retry the {} you missed or skipped:",
                             missed.size() == 1 ? "one" : std::to_string(missed.size())),
                 options.command + " --only " + numbers(missed), options, out, style);
  // --only names exactly the questions of this walk not answered; --resume (saved progress) would also
  // take those of the track this walk did not choose.
  if (!later.empty())
    print_advice("Go on where you stopped:", options.command + " --only " + numbers(later), options, out,
                 style);
  if (options.progress) {
    const std::string saved = fmt::format(
        "Progress saved in {}: {} progress shows it, {} --resume goes on with the questions never answered.",
        lab::escape(options.progress->file().string()), command_of(options), options.command);
    out << style.dim(options.width ? lab::wrap(saved, options.width) : saved) << "\n";
  }
}

}  // namespace

void print_summary(const std::vector<Answered>& walked, const Quiz& track, const WalkOptions& options,
                   const std::string& stop_reason, std::ostream& out, const lab::Style& style) {
  if (!stop_reason.empty()) out << "\n" << style.yellow("Stopped (" + stop_reason + ").") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : walked) rows.push_back(summary_row(a, options.reveal));
  out << "\n" << style.bold("Summary") << "\n";
  for (const auto& line : lab::format_table({"#", "question", "your answer", "correct", "lab checks"}, rows,
                                            options.width > 2 ? options.width - 2 : 0))
    out << "  " << line << "\n";
  const Tally t = tally(walked);
  if (!options.reveal) {
    const std::string score = fmt::format("Score: {}/{} right", t.right, walked.size());
    const auto lines = lab::wrap_lines(
        score + fmt::format(" ({} wrong, {} skipped{}{})", t.wrong, t.skipped,
                            t.left ? fmt::format(", {} left at its prompt", t.left) : "",
                            stop_reason.empty() ? "" : fmt::format(", {} not reached", t.not_reached)),
        options.width, "", "  ");
    for (size_t k = 0; k < lines.size(); ++k) {
      const bool lead = k == 0 && lines[k].compare(0, score.size(), score) == 0;
      out << (lead ? style.bold(score) + lines[k].substr(score.size()) : lines[k]) << "\n";
    }
  }
  out << lab::paragraph("", checks_line(t), options.width, 2) << "\n";
  if (!options.reveal) print_next_steps(walked, track, options, out, style);
}

}  // namespace runner
