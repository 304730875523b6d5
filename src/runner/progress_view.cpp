// `amp-lab progress`: the saved progress as a learner reads it (src/runner/progress.h).
#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "lab/text.h"
#include "runner/progress.h"

namespace runner {
namespace {

// "2026-11-30T08:03:12Z" as "2026-11-30 08:03 UTC"; anything else as it is.
std::string when(const std::string& at) {
  if (at.size() == 20 && at[10] == 'T' && at.back() == 'Z')
    return at.substr(0, 10) + " " + at.substr(11, 5) + " UTC";
  return lab::escape(at, 40);
}

// The option as the learner saw it on that attempt (the letter typed), else by its id.
std::string result_of(const Attempt& a) {
  if (a.outcome == Outcome::Skipped) return "skipped";
  const char letter = a.shown ? a.shown : a.answer ? a.answer : '?';
  return std::string(1, letter) + (a.outcome == Outcome::Right ? " (right)" : " (wrong)");
}

// The first try's cell: "?" when a version-1 file counted attempts before the one it kept.
std::string first_of(const QuestionRecord& r) {
  const Attempt* first = r.first_try();
  return first ? result_of(*first) : "?";
}

void print_lines(std::ostream& out, const std::string& text, size_t width, const std::string& first,
                 const std::string& rest) {
  for (const auto& line : lab::wrap_lines(text, width, first, rest)) out << line << "\n";
}

// One track: a summary line, its questions, and the commands that go on from here.
void print_track(std::ostream& out, const Progress& progress, const Quiz& full, const Track& track,
                 size_t width, const lab::Style& style, const std::string& program) {
  const Quiz quiz = select_track(full, track.id);
  int right = 0, wrong = 0, skipped = 0, hints = 0, first_right = 0;
  std::vector<std::vector<std::string>> rows;
  for (const auto& q : quiz.questions) {
    const QuestionRecord* r = find_record(progress, q);
    if (r) (r->outcome == Outcome::Right ? right : r->outcome == Outcome::Wrong ? wrong : skipped) += 1;
    if (r) hints += r->hints;
    if (r && r->first_try() && r->first_try()->outcome == Outcome::Right) ++first_right;
    if (r)
      rows.push_back({std::to_string(q.number), q.id, first_of(*r), result_of(r->history.back()),
                      std::to_string(r->attempts), std::to_string(r->hints), when(r->at)});
    else
      rows.push_back({std::to_string(q.number), q.id, "-", "", "", "", ""});
  }
  const int answered = right + wrong + skipped;
  out << "\n" << style.bold(fmt::format("Track {}", track.id)) << "\n";
  print_lines(out,
              answered == 0 ? fmt::format("{}: not started ({} {})", track.title, quiz.questions.size(),
                                          quiz.questions.size() == 1 ? "question" : "questions")
                            : fmt::format("{}: {} of {} answered: {} right, {} wrong, {} skipped; {} {} used",
                                          track.title, answered, quiz.questions.size(), right, wrong, skipped,
                                          hints, hints == 1 ? "hint" : "hints"),
              width, "  ", "    ");
  if (answered == 0) return;
  // The first try is what the learner knew; the latest, what they know now. A version-1 file's record
  // whose earlier attempts went unrecorded has no first try to count.
  print_lines(out,
              fmt::format("score: first try {}/{} right, latest {}/{} right", first_right,
                          quiz.questions.size(), right, quiz.questions.size()),
              width, "  ", "    ");
  for (const auto& line :
       lab::format_table({"#", "question", "first try", "latest", "tries", "hints", "when"}, rows,
                         width > 4 ? width - 4 : 0))
    out << "    " << line << "\n";
  if (const auto retry = retry_questions(progress, quiz); !retry.empty())
    print_lines(out, "retry the missed and skipped: " + only_command(full, track.id, retry, program), width,
                "  ", "    ");
  if (const auto rest = resume_questions(progress, quiz); !rest.empty())
    print_lines(out, "go on where you stopped: " + only_command(full, track.id, rest, program), width, "  ",
                "    ");
}

// The exercises as the file holds them: each one's status and when, where it has them.
void print_exercises(std::ostream& out, const nlohmann::json& exercises, size_t width,
                     const lab::Style& style) {
  if (!exercises.is_object() || exercises.empty()) return;
  out << "\n" << style.bold("Exercises") << "\n";
  for (const auto& [id, e] : exercises.items()) {
    std::string line = lab::escape(id, 60) + ": ";
    if (e.is_object() && e.contains("status") && e["status"].is_string()) {
      line += lab::escape(e["status"].get<std::string>(), 60);
      // What the exercises record beside the status (runner/exercise_commands.cpp): help used, last check.
      if (e.contains("last") && e["last"].is_string() && e["status"] != "done")
        line += ", " + lab::escape(e["last"].get<std::string>(), 60);
      if (e.contains("hints") && e["hints"].is_number_integer() && e["hints"].get<int>() > 0)
        line +=
            fmt::format(", {} hint{} shown", e["hints"].get<int>(), e["hints"].get<int>() == 1 ? "" : "s");
      if (e.contains("solution") && e["solution"] == true) line += ", solution seen";
      if (e.contains("at") && e["at"].is_string()) line += " (" + when(e["at"].get<std::string>()) + ")";
    } else {
      line += lab::escape(e.dump(), 120);
    }
    print_lines(out, line, width, "  ", "    ");
  }
}

}  // namespace

void print_progress(std::ostream& out, const Progress& progress, const Quiz& full,
                    const std::filesystem::path& file, size_t width, bool color, const std::string& program) {
  const lab::Style style{color};
  out << style.bold("Progress") << "\n";
  print_lines(out, "saved in " + lab::escape(file.string()), width, "", "  ");
  for (const auto& track : full.tracks) print_track(out, progress, full, track, width, style, program);
  // Tracks the file knows and quiz.yaml no longer has: said, not dropped.
  for (const auto& [track, questions] : progress.quiz) {
    if (std::any_of(full.tracks.begin(), full.tracks.end(), [&](const Track& t) { return t.id == track; }))
      continue;
    out << "\n";
    print_lines(
        out,
        fmt::format("track {}: {} saved {} for a track quiz.yaml no longer has", lab::quote(track, 40),
                    questions.size(), questions.size() == 1 ? "answer" : "answers"),
        width, "", "  ");
  }
  print_exercises(out, progress.exercises, width, style);
}

}  // namespace runner
