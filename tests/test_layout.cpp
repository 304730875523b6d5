// Layout to a terminal's width: prose wraps at word boundaries, tables narrow or fold into records, charts
// keep their bars on one row each, and nothing is wider than the width asked for. The last two cases hold
// every lab's real report (its executable's --json) and every explanation in quiz.yaml to that at 80 and
// 120 columns, so a lab or question added later is covered without a new test; the walk through the real
// amp-lab keeps to COLUMNS, and each question's screen to 40 rows at 80x40.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "lab/report.h"
#include "lab/text.h"
#include "runner/catalog_labs.h"
#include "runner/quiz.h"
#include "support/cli.h"
#include "support/process.h"
#include "support/walk.h"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string without_escapes(const std::string& text) {
  static const std::regex sgr("\x1b\\[[0-9;]*m");
  return std::regex_replace(text, sgr, "");
}

// The lines of `text` wider than `width` glyphs, for the failure message.
std::string too_wide(const std::string& text, size_t width) {
  std::string out;
  for (const auto& line : lines_of(without_escapes(text)))
    if (lab::display_width(line) > width)
      out += "\n  [" + std::to_string(lab::display_width(line)) + "] " + line;
  return out;
}

std::vector<std::string> tokens_of(const std::string& text) {
  std::vector<std::string> tokens;
  std::istringstream in(without_escapes(text));
  static const std::regex not_a_word("-+|[▁▂▃▄▅▆▇█]+");  // a table's rule, a chart's bar: cut to fit
  for (std::string t; in >> t;)
    if (!std::regex_match(t, not_a_word)) tokens.push_back(t);
  return tokens;
}

// A word split across lines leaves pieces that are not words of the unwrapped text ("autoc", "ast"); a
// dropped word is missing from the wrapped one. Allowed besides the text's own words: "column:" (a folded
// table's record label) and "[k]" (a histogram marker moved below its chart).
std::string split_or_lost_words(const std::string& wrapped, const std::string& unwrapped) {
  const auto narrow = tokens_of(wrapped), wide = tokens_of(unwrapped);
  const std::set<std::string> narrow_set(narrow.begin(), narrow.end()), wide_set(wide.begin(), wide.end());
  static const std::regex note_mark(R"(\[\d+\])");
  std::string out;
  for (const auto& t : narrow_set) {
    const bool label = t.size() > 1 && t.back() == ':' && wide_set.count(t.substr(0, t.size() - 1));
    if (!wide_set.count(t) && !label && !std::regex_match(t, note_mark)) out += "\n  split: '" + t + "'";
  }
  for (const auto& t : wide_set)
    if (!narrow_set.count(t) && !narrow_set.count(t + ":")) out += "\n  lost: '" + t + "'";
  return out;
}

void check_fits(const std::string& wrapped, const std::string& unwrapped, size_t width) {
  INFO("at " << width << " columns:\n" << wrapped);
  CHECK_MESSAGE(too_wide(wrapped, width).empty(),
                "lines wider than " << width << ":" << too_wide(wrapped, width));
  CHECK_MESSAGE(split_or_lost_words(wrapped, unwrapped).empty(), split_or_lost_words(wrapped, unwrapped));
}

// A report with one of everything, each too wide for 60 columns.
lab::Report wide_report() {
  lab::Report r("demo",
                "A title long enough that it has to wrap when the terminal is only sixty columns wide");
  r.set_header("Q9 · labs/09_demo/lab.cpp · device cpu · seed 0 · and more context than sixty columns hold");
  r.section("A section heading that states what was measured in this part, at some length");
  r.note("a note that goes on and on about the conditions of the measurement, its sizes, and its dtypes");
  r.observe("share", "share of the updates lost to rounding in a pure fp16 run of many steps", 55.61, "%");
  r.observe("speed", "speed", 1.9, "x",
            "1.9x the speed of fp32 (faster) through the bf16 kernel, against 0.862x converted to fp32");
  r.table("a table", {"op", "inputs", "output", "documented policy on this device"})
      .row({"mm", "fp32, fp32", "bf16", "lower-precision list: bf16"})
      .row({"mm (fp64 inputs)", "fp64, fp64", "fp64", "lower-precision list, but fp64 is never cast"});
  r.chart({"a histogram",
           {"  [2^-19,2^-14)  ████████████   18.7%  <- fp16 subnormals up to 2^-14: kept, with fewer bits",
            "  [2^-24,2^-19)  █████████████  20.7%"},
           nlohmann::json::object()});
  r.takeaway("a conclusion that is long enough to need a second line at sixty columns of width");
  r.check("key", "a claim about the data of this run that needs more than one line to state", true,
          "the evidence for it, measured, with the numbers that were compared and the bounds they met");
  return r;
}

// Every lab's report from its executable's --json, run once per mode for the cases below: quick mode, as
// the tests run labs, and the default mode the quiz shows (its charts and tables are larger).
const std::map<std::string, lab::Report>& lab_reports(bool quick) {
  const auto run_all = [](bool quick_mode) {
    std::map<std::string, lab::Report> out;
    for (const auto& decl : lab::catalog()) {
      std::vector<std::string> argv{AMP_LAB_BINARY_DIR "/bin/" + decl.executable(), "--json"};
      if (quick_mode) argv.push_back("--quick");
      const auto run = test_support::run_process(argv, /*timeout_s=*/300);
      INFO(decl.executable() << (quick_mode ? " --quick" : "") << " exited " << run.code
                             << "; stderr: " << run.err);
      REQUIRE((run.code == 0 || run.code == 1));
      out.emplace(decl.id, lab::Report::from_json(nlohmann::json::parse(run.out)));
    }
    return out;
  };
  static std::map<bool, std::map<std::string, lab::Report>> reports;
  if (!reports.count(quick)) reports.emplace(quick, run_all(quick));
  return reports.at(quick);
}

std::vector<std::pair<const lab::LabDecl*, bool>> every_lab_in_both_modes() {
  std::vector<std::pair<const lab::LabDecl*, bool>> out;
  for (const bool quick : {true, false})
    for (const auto& decl : lab::catalog()) out.emplace_back(&decl, quick);
  return out;
}

}  // namespace

TEST_CASE("the layout checks of this file catch a split word, a lost word and a line too wide") {
  CHECK_FALSE(split_or_lost_words("the autoc\nast region", "the autocast region").empty());
  CHECK_FALSE(split_or_lost_words("the region", "the autocast region").empty());
  CHECK(split_or_lost_words("the\nautocast region", "the autocast region").empty());
  CHECK(split_or_lost_words("op: mm\n  [1] x", "op mm x").empty());  // record labels and note marks
  CHECK_FALSE(too_wide("12345\n123456", 5).empty());
  CHECK(too_wide("\x1b[1m12345\x1b[0m\n██████", 6).empty());  // escapes take no columns, glyphs one each
}

TEST_CASE("terminal_width takes the terminal's columns, else COLUMNS, else 80, within sane bounds") {
  CHECK(lab::terminal_width(132, "100") == 132);  // a terminal's own width comes first
  CHECK(lab::terminal_width(0, "100") == 100);    // a pipe or a file: COLUMNS
  CHECK(lab::terminal_width(0, nullptr) == 80);
  CHECK(lab::terminal_width(0, "") == 80);
  CHECK(lab::terminal_width(0, "abc") == 80);
  CHECK(lab::terminal_width(0, "-5") == 80);
  CHECK(lab::terminal_width(0, "80x") == 80);
  CHECK(lab::terminal_width(0, "0") == 80);
  CHECK(lab::terminal_width(0, "99999999999") == 80);  // not a width anyone has
  CHECK(lab::terminal_width(0, "5") == lab::kMinLayoutWidth);
  CHECK(lab::terminal_width(0, "5000") == 1000);
  CHECK(lab::terminal_width(3, nullptr) == lab::kMinLayoutWidth);
}

// terminal_width() with standard output moved onto `fd` and COLUMNS set to `columns` (nullptr: unset).
size_t width_with_stdout_on(int fd, const char* columns) {
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  REQUIRE(saved >= 0);
  REQUIRE(::dup2(fd, STDOUT_FILENO) >= 0);
  const char* before = std::getenv("COLUMNS");
  const std::optional<std::string> kept = before ? std::optional<std::string>(before) : std::nullopt;
  if (columns)
    ::setenv("COLUMNS", columns, 1);
  else
    ::unsetenv("COLUMNS");
  const size_t width = lab::terminal_width();
  if (kept)
    ::setenv("COLUMNS", kept->c_str(), 1);
  else
    ::unsetenv("COLUMNS");
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  return width;
}

TEST_CASE("terminal_width on a pipe follows COLUMNS, and is 80 without it") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  CHECK(width_with_stdout_on(fds[1], "97") == 97);
  CHECK(width_with_stdout_on(fds[1], nullptr) == 80);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("terminal_width on a terminal takes its columns and ignores COLUMNS") {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(tty >= 0);
  struct winsize size{};
  size.ws_col = 132;
  size.ws_row = 40;
  REQUIRE(::ioctl(tty, TIOCSWINSZ, &size) == 0);
  CHECK(width_with_stdout_on(tty, "97") == 132);
  size.ws_col = 0;  // a terminal that reports no width (a serial console): COLUMNS, else 80
  REQUIRE(::ioctl(tty, TIOCSWINSZ, &size) == 0);
  CHECK(width_with_stdout_on(tty, "97") == 97);
  CHECK(width_with_stdout_on(tty, nullptr) == 80);
  ::close(tty);
  ::close(master);
}

TEST_CASE("wrap_lines breaks at word boundaries with a hanging indent and never splits a word") {
  const auto lines = lab::wrap_lines("the quick brown fox jumps over the lazy dog", 16, "  ", "    ");
  CHECK(lines ==
        std::vector<std::string>{"  the quick", "    brown fox", "    jumps over", "    the lazy dog"});
  // A word wider than the room gets its own line, whole.
  CHECK(lab::wrap_lines("a supercalifragilistic b", 10) ==
        std::vector<std::string>{"a", "supercalifragilistic", "b"});
  // What fits stays as it is, inner blanks included; otherwise blanks and newlines are one space.
  CHECK(lab::wrap_lines("16  B", 20, "  ") == std::vector<std::string>{"  16  B"});
  CHECK(lab::wrap_lines("one\ntwo  three", 40) == std::vector<std::string>{"one two three"});
  CHECK(lab::wrap_lines("", 10, "=> ") == std::vector<std::string>{"=>"});
  CHECK(lab::wrap_lines("glyphs ████ count once", 11) ==
        std::vector<std::string>{"glyphs ████", "count once"});
}

TEST_CASE("paragraph lays out an explanation after its lead, later lines indented under the text") {
  const std::string p =
      lab::paragraph("Why:", "FP16 cannot hold very small numbers, and the lab shows it", 30);
  CHECK(p == "Why: FP16 cannot hold very\n     small numbers, and the\n     lab shows it");
  CHECK(lab::paragraph("Not a) Overfitting:", "no.", 80) == "Not a) Overfitting: no.");
  CHECK(lab::paragraph("", "text", 0) == "text");
  check_fits(lab::paragraph("Why:", std::string(30, 'x') + " " + "words of a sentence", 40),
             std::string(30, 'x') + " Why: words of a sentence", 40);
}

TEST_CASE(
    "a table that fits is unchanged, a wider one wraps its cells, and a much wider one becomes records") {
  const std::vector<std::string> columns{"run", "final loss", "documented policy"};
  const std::vector<std::vector<std::string>> rows{{"fp32", "8.56e-01", "lower-precision list: bf16"},
                                                   {"fp16", "8.78e-01", "no list: follows its inputs"}};
  CHECK(lab::format_table(columns, rows, 80) == lab::format_table(columns, rows));
  CHECK(lab::format_table(columns, rows, 0) == lab::format_table(columns, rows));

  const auto narrow = lab::format_table(columns, rows, 36);
  const std::string joined = [&] {
    std::string s;
    for (const auto& l : narrow) s += l + "\n";
    return s;
  }();
  check_fits(
      joined,
      [&] {
        std::string s;
        for (const auto& l : lab::format_table(columns, rows)) s += l + "\n";
        return s;
      }(),
      36);
  CHECK(narrow.size() > lab::format_table(columns, rows).size());  // some cells took two lines
  CHECK(narrow[2].rfind("fp32", 0) == 0);  // the rows still start with their first cell

  // Seven columns of long words cannot share 40 columns: one record per row.
  const std::vector<std::string> many{"step",       "scale loss0",       "scale loss1",      "optimizer0",
                                      "optimizer1", "gradient-error-m0", "gradient-error-m1"};
  const std::vector<std::vector<std::string>> values{
      {"0", "1024", "1024", "step", "skip", "4.21e-04", "(inf)"}};
  const auto records = lab::format_table(many, values, 40);
  CHECK(records == std::vector<std::string>{"step: 0", "  scale loss0: 1024", "  scale loss1: 1024",
                                            "  optimizer0: step", "  optimizer1: skip",
                                            "  gradient-error-m0: 4.21e-04", "  gradient-error-m1: (inf)"});
}

TEST_CASE("a report rendered without a width is what it always was, and with one fits it") {
  const lab::Report r = wide_report();
  const std::string unwrapped = r.render_text();
  CHECK(r.render_text({.width = 0}) == unwrapped);
  CHECK(
      unwrapped.find("  share of the updates lost to rounding in a pure fp16 run of many steps  55.61%\n") !=
      std::string::npos);
  CHECK_FALSE(too_wide(unwrapped, 60).empty());  // the case is a real one
  for (const size_t width : {60, 80, 120}) check_fits(r.render_text({.width = width}), unwrapped, width);
  // Colour codes take no columns.
  check_fits(r.render_text({.color = true, .width = 60}), unwrapped, 60);
  // The layout keeps what it shows apart: hanging indents for prose and claims, evidence under the claim.
  const std::string at60 = r.render_text({.width = 60});
  CHECK(at60.find("  a note that goes on and on about the conditions of the\n    measurement") !=
        std::string::npos);
  CHECK(at60.find("  PASS  a claim about the data of this run that needs more\n          than one line") !=
        std::string::npos);
  CHECK(at60.find("\n        the evidence for it") != std::string::npos);
  CHECK(at60.find("  => a conclusion that is long enough to need a second line\n     at sixty") !=
        std::string::npos);
}

TEST_CASE("a histogram keeps one row per bin: marker labels that do not fit move below it as notes") {
  const lab::Report r = wide_report();
  const std::string at60 = r.render_text({.width = 60});
  INFO(at60);
  CHECK(at60.find(
            "      [2^-19,2^-14)  ████████████   18.7%  <- [1]\n      [2^-24,2^-19)  █████████████  20.7%\n"
            "    [1] fp16 subnormals up to 2^-14: kept, with fewer bits\n") != std::string::npos);
  // At 120 columns the label fits beside its bar and stays there.
  CHECK(r.render_text({.width = 120}).find("18.7%  <- fp16 subnormals up to 2^-14") != std::string::npos);
}

TEST_CASE("a sparkline longer than the line continues on the next, and its range follows") {
  lab::Report r("demo", "Demo");
  std::string glyphs;
  for (int i = 0; i < 100; ++i) glyphs += i % 2 ? "▁" : "█";
  r.chart({"scale", {glyphs + "  (min 2^16, max 2^30)"}, nlohmann::json::object()});
  const std::string at80 = r.render_text({.width = 80});
  INFO(at80);
  CHECK(too_wide(at80, 80).empty());
  CHECK(at80.find("    " + glyphs.substr(0, 76 * 3) + "\n    " + glyphs.substr(76 * 3) +
                  "\n      (min 2^16, max 2^30)\n") != std::string::npos);
}

TEST_CASE("an observation's label and value wrap in their own columns, so the values stay aligned") {
  const std::string at60 = wide_report().render_text({.width = 60});
  const auto lines = lines_of(at60);
  const auto at = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("  share of the updates", 0) == 0;
  });
  REQUIRE(at != lines.end());
  const size_t value_column = at->find("55.61%");
  REQUIRE(value_column != std::string::npos);
  const auto speed = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.rfind("  speed ", 0) == 0; });
  REQUIRE(speed != lines.end());
  CHECK(speed->find("1.9x") == value_column);
  CHECK(std::next(speed)->find_first_not_of(' ') == value_column + 2);  // the value's own hanging indent
}

TEST_CASE(
    "every lab's report, quick and default, fits 80 and 120 columns in every part, no word split or lost") {
  for (const auto& [decl, quick] : every_lab_in_both_modes()) {
    CAPTURE(decl->id);
    CAPTURE(quick);
    const lab::Report& r = lab_reports(quick).at(decl->id);
    for (const lab::Part part :
         {lab::Part::Measured, lab::Part::Details, lab::Part::Verdict, lab::Part::All}) {
      CAPTURE(static_cast<int>(part));
      const lab::RenderOptions unwrapped{.part = part, .heading = decl->heading};
      for (const size_t width : {80, 120}) {
        lab::RenderOptions options = unwrapped;
        options.width = width;
        check_fits(r.render_text(options), r.render_text(unwrapped), width);
      }
    }
  }
}

TEST_CASE(
    "every explanation, why_not and hint in quiz.yaml fits 80 and 120 columns, filled with its lab's "
    "numbers") {
  const runner::Quiz quiz = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  REQUIRE_FALSE(quiz.questions.empty());
  for (const auto& q : quiz.questions) {
    CAPTURE(q.id);
    std::map<std::string, std::string> values;
    const auto report = lab_reports(/*quick=*/true).find(q.lab);
    REQUIRE(report != lab_reports(true).end());
    for (const auto& o : report->second.observations()) {
      values[o.key] = o.text;
      values[o.key + ":value"] = lab::num(o.value, 3) + o.unit;
    }
    std::vector<std::pair<std::string, std::string>> paragraphs{{"Why:", runner::fill(q.explanation, values)},
                                                                {"Hint:", runner::fill(q.hint, values)}};
    for (const auto& [index, why] : q.why_not)
      paragraphs.push_back({std::string("Not ") + char('a' + index) + ") " + q.options[index] + ":",
                            runner::fill(why, values)});
    for (const auto& [lead, text] : paragraphs)
      for (const size_t width : {80, 120})
        check_fits(lab::paragraph(lead, text, width), lead + " " + text, width);
  }
}

// ---- The walk through the real amp-lab, to the width and the height it is given ---------------------------

TEST_CASE("the walk is laid out to the width: no line longer than COLUMNS at 80 and at 120") {
  for (const char* columns : {"80", "120"}) {
    CAPTURE(columns);
    const auto r = test_support::run(
        std::string("quiz --track all --quick --device cpu --only 2,3,13,14 --file-order --answers abcd"), "",
        "amp-lab", std::string("COLUMNS=") + columns);
    // Typed answers: the summary then also says where the progress was saved.
    const auto typed = test_support::run("quiz --quick --device cpu --file-order --only 1", "a\n", "amp-lab",
                                         std::string("COLUMNS=") + columns);
    REQUIRE(r.code == 0);
    REQUIRE(typed.code == 0);
    REQUIRE(test_support::has(typed.out, "Progress saved in"));
    std::istringstream lines(r.out + typed.out);
    for (std::string line; std::getline(lines, line);) {
      size_t glyphs = 0;
      for (unsigned char c : line) glyphs += (c & 0xC0) != 0x80;
      CAPTURE(line);
      CHECK(glyphs <= static_cast<size_t>(std::stoi(columns)));
    }
  }
}

TEST_CASE("at 80x40 each question's screen, from its banner to its prompt, fits the terminal's 40 rows") {
  const auto all = runner::select_track(test_support::project_quiz(), runner::kAllTracks);
  const auto r = test_support::run("quiz --quick --device cpu --track all --file-order --answers " +
                                       std::string(all.questions.size(), 's'),
                                   "", "amp-lab", "COLUMNS=80 LINES=40");
  REQUIRE(r.code == 0);
  size_t from = 0, i = 0;
  for (const auto& q : all.questions) {
    CAPTURE(q.number);
    const size_t banner = r.out.find("━━ " + std::to_string(++i) + "/", from);
    REQUIRE(banner != std::string::npos);
    const size_t prompt = r.out.find("Your answer", banner);
    REQUIRE(prompt != std::string::npos);
    std::string screen = r.out.substr(banner, prompt - banner);
    // The terms a screen uses are glossed before its prompt; when they do not fit with the rest they come
    // first, under the banner, so that what the lab measured and the question fit the 40 rows together.
    if (const size_t terms = screen.find("\nTerms:\n");
        terms != std::string::npos && test_support::count(screen, "\n") + 1 > 40) {
      CHECK(test_support::count(screen.substr(0, terms), "\n") <= 2);  // right under the banner
      size_t end = terms + 7;  // the line break after "Terms:"; then one gloss a line, indented
      while (screen.compare(end, 3, "\n  ") == 0) end = screen.find('\n', end + 1);
      screen = screen.substr(end + 1);
    }
    CHECK(test_support::count(screen, "\n") + 1 <= 40);  // + 1: the prompt's own line
    from = prompt;
  }
}
