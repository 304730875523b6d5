// The walk as a person at a terminal sees it: the real runner on a pseudo-terminal of a given size, typed
// answers, Enter at the pauses. After each answer the answer screen (right or wrong, the correct option,
// the "Why" with this run's numbers, the learner's own "Not x)") fits above the pause; the rest is one key
// away and fits or pages; the whole walk of every track stays short enough to read; the terms a screen
// uses are glossed before its prompt; a resized terminal lays the next screen out anew.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "runner/catalog_labs.h"
#include "runner/glossary.h"
#include "runner/quiz.h"
#include "support/answer_leak.h"
#include "support/process.h"
#include "support/temp_folder.h"
#include "support/terminal.h"

namespace test_walk_screen {
namespace {

namespace fs = std::filesystem;
using test_support::glyphs;
using test_support::lines_of;
using test_support::Terminal;

const std::string kRunner = AMP_LAB_BINARY_DIR "/bin/amp-lab";
const std::string kPrompt = "Your answer [a-d;";
const std::string kPauseEnd = "q quit ";  // the pause line's last words, before the learner types

// A private state folder: the walk's saved progress goes there, not to the person's running the tests.
struct StateDir : test_support::TempFolder {
  StateDir() : TempFolder("walk_screen") {}
  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + path.string(), "AMP_LAB_COMMAND=amp-lab"};
  }
};

runner::Quiz all_questions() {
  const runner::Quiz quiz = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  return runner::select_track(quiz, runner::kAllTracks);
}

// The glossary the walk glosses from (the clone's, as the runner built here reads it).
const runner::Glossary& glossary() {
  static const runner::Glossary g = runner::load_glossary(AMP_LAB_SOURCE_DIR "/glossary.yaml");
  return g;
}

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// A wrong option: the answer screen then holds the learner's own "Not x)" too, its longest form.
char wrong_letter(const runner::Question& q) {
  return static_cast<char>('a' + (q.answer + 1) % static_cast<int>(q.options.size()));
}

// Answers the question at the prompt with `letter`, then goes on at the pause with Enter.
void answer(Terminal& t, char letter) {
  REQUIRE(t.expect(kPrompt, 300));
  t.type(std::string(1, letter) + "\n");
  REQUIRE(t.expect(kPauseEnd));
  t.type("\n");
}

}  // namespace

TEST_CASE("at 80x40, every answer screen of every track fits above its pause, and the walk stays short") {
  const runner::Quiz quiz = all_questions();
  REQUIRE(quiz.questions.size() >= 14);
  StateDir state;
  Terminal t({kRunner, "quiz", "--file-order", "--track", "all", "--device", "cpu"}, 80, 40, state.env());
  std::set<std::string> glossed;  // the terms glossed so far in the walk (each once)
  REQUIRE(t.expect("━━ 1/"));     // the walk's header above (its title, the device) is no question's screen
  for (size_t i = 0; i < quiz.questions.size(); ++i) {
    const runner::Question& q = quiz.questions[i];
    CAPTURE(q.number);
    const size_t start = t.position();
    REQUIRE(t.expect(kPrompt, 300));
    REQUIRE(t.expect("]: "));
    const std::string before_prompt = t.screen().substr(start, t.position() - start);
    // Terms before they are needed: every glossary term the screen uses before its prompt is glossed
    // before the prompt, on this screen or an earlier one.
    for (const auto& line : lines_of(before_prompt))
      for (const runner::Term& term : glossary().terms())
        if (line.rfind("  " + term.name + ": ", 0) == 0) glossed.insert(term.name);
    // A screen short of rows names the rest of the lab's terms on one line that `t` defines: named there,
    // a term counts as shown.
    const std::string more = "More terms (t defines them): ";
    if (const size_t at = before_prompt.find(more); at != std::string::npos) {
      std::string names;
      for (size_t from = at + more.size();;) {  // the line and its continuations, indented by two
        const size_t end = before_prompt.find('\n', from);
        names += before_prompt.substr(from, end - from) + " ";
        if (end == std::string::npos || before_prompt.compare(end + 1, 2, "  ") != 0 ||
            before_prompt.compare(end + 3, 1, " ") == 0)
          break;
        from = end + 3;
      }
      for (const runner::Term* term : glossary().terms_in(names)) glossed.insert(term->name);
    }
    // (Not counted: the terms a definition itself uses, read in passing, and the options' terms, which are
    // glossed before the prompt only where two options or more use them: a gloss of a term only one option
    // uses would point at that option.)
    std::string used;
    const size_t options = before_prompt.rfind("\n  a) ");
    REQUIRE(options != std::string::npos);
    for (const auto& line : lines_of(before_prompt.substr(0, options))) {
      const bool gloss =
          std::any_of(glossary().terms().begin(), glossary().terms().end(),
                      [&](const runner::Term& term) { return line.rfind("  " + term.name + ": ", 0) == 0; });
      if (!gloss) used += line + "\n";
    }
    // A screen filled to its last row may leave even the line of names out (the t key defines them).
    const bool full = count_lines(before_prompt) + 1 >= 40;
    for (const runner::Term* term : glossary().terms_in(used)) {
      CAPTURE(term->name);
      CHECK((full || glossed.count(term->name) == 1));
    }
    t.type(std::string(1, wrong_letter(q)) + "\n");
    REQUIRE(t.expect("\n"));  // the echo of the typed answer
    const size_t answered = t.position();
    REQUIRE(t.expect(kPauseEnd, 120));
    std::string screen = t.screen().substr(answered, t.position() - answered);
    // A key typed before the walk turned on one-key mode is echoed by the terminal too: the walk's own echo
    // of it may follow, on a line of its own, before the screen.
    if (screen.size() > 1 && screen[0] == wrong_letter(q) && (screen[1] == '\n' || screen[1] == '\r'))
      screen.erase(0, screen.find('\n') + 1);
    screen.erase(0, screen.find_first_not_of("\r\n"));
    // The answer screen, up to and with the pause line, fits a 40-line terminal with the echo and a line to
    // spare: at most 38 lines before the walk waits.
    CHECK(count_lines(screen) + 1 <= 38);
    CHECK(screen.find("Not quite: you chose " + std::string(1, wrong_letter(q)) + ". The answer is " +
                      std::string(1, static_cast<char>('a' + q.answer)) + ")") == 0);
    CHECK(screen.find("Why: ") != std::string::npos);
    CHECK(screen.find("\nNot " + std::string(1, wrong_letter(q)) + ") ") != std::string::npos);  // theirs
    for (const auto& line : lines_of(screen)) CHECK(glyphs(line) <= 80);
    if (i + 1 == quiz.questions.size())  // a pause after the last question too, before the summary
      CHECK(screen.find("Enter summary") != std::string::npos);
    CHECK(t.screen().find("Summary", answered) == std::string::npos);
    t.type("\n");
  }
  REQUIRE(t.expect("Score: 0/", 60));
  CHECK(t.wait_exit() == 0);  // every lab's checks held
  // The whole walk, answered and paused with Enter only, reads in about two minutes a question: at most 64
  // lines a question on average (900 for the 14 questions it had when the bound was set).
  MESSAGE("the walk printed " << count_lines(t.screen()) << " lines for " << quiz.questions.size()
                              << " questions");
  CHECK(count_lines(t.screen()) <= 64 * quiz.questions.size());
}

TEST_CASE("at the pause each key shows its part, and a part longer than the screen is paged") {
  StateDir state;
  const unsigned rows = 16;  // small, so that the checks and the terms need more than one screen
  Terminal t({kRunner, "quiz", "--file-order", "--only", "2", "--quick", "--device", "cpu"}, 80, rows,
             state.env());
  REQUIRE(t.expect(kPrompt, 300));
  t.type("a\n");
  REQUIRE(t.expect("Enter summary · o other options · d details · c checks · t terms · q quit "));
  struct Key {
    char key;
    std::string shows;  // a text only that part holds
  };
  for (const Key& k : {Key{'o', "Not c) GPUs running out of disk space"}, Key{'d', "Dynamic scaling"},
                       Key{'c', "verdict: PASS"}, Key{'t', "loss scale: "}}) {
    CAPTURE(k.key);
    const size_t from = t.position();
    CHECK(t.screen().find(k.shows, from) == std::string::npos);
    t.type(std::string(1, k.key) + "\n");
    size_t screens = 0;
    for (;;) {  // each screen of the part: at most rows - 1 lines, then the more line or the pause line
      const size_t at = t.position();
      const int which = t.expect_any({"Enter, q back -- ", kPauseEnd});
      REQUIRE(which >= 0);
      ++screens;
      // The typed key's line, the part's lines, then the more line or a blank and the pause line: the
      // part and the line below it on the screen together.
      const std::string shown = t.screen().substr(at, t.position() - at);
      CHECK(count_lines(shown) <= rows);
      if (which == 1) break;
      t.type("\n");
    }
    CHECK(t.screen().find(k.shows, from) < t.position());
    if (k.key == 'c' || k.key == 't') CHECK(screens >= 2);  // paged, not scrolled away
  }
  t.type("x\n");  // an unknown key says which keys there are, and waits again
  REQUIRE(t.expect("Press Enter to go on, or one of o, d, c, t, q"));
  REQUIRE(t.expect(kPauseEnd));
  t.type("\n");
  REQUIRE(t.expect("Score: 0/1 right"));
  CHECK(t.wait_exit() == 0);
}

TEST_CASE("a terminal resized during the walk lays the next screen out at its new width (SIGWINCH)") {
  StateDir state;
  Terminal t({kRunner, "quiz", "--only", "2,3", "--quick", "--device", "cpu"}, 100, 40, state.env());
  REQUIRE(t.expect(kPrompt, 300));
  size_t widest = 0;
  for (const auto& line : lines_of(t.screen())) widest = std::max(widest, glyphs(line));
  REQUIRE(widest > 60);  // the first screen uses the width it had
  t.type("b\n");
  REQUIRE(t.expect(kPauseEnd));
  t.resize(44, 40);  // the kernel sends SIGWINCH to the walk
  const size_t from = t.position();
  t.type("\n");
  REQUIRE(t.expect(kPrompt, 300));
  const std::string next = t.screen().substr(from, t.position() - from);
  size_t too_wide = 0;
  for (std::string line : lines_of(next)) {
    line.erase(0, line.rfind('\r') == std::string::npos ? 0 : line.rfind('\r') + 1);  // what stays on screen
    if (glyphs(line) > 44 && line.find(' ', line.find_first_not_of(' ')) != std::string::npos) {
      MESSAGE("too wide: " << line);
      ++too_wide;
    }
  }
  CHECK(too_wide == 0);  // only a single word longer than the screen may stick out
  t.type("q\n");
  t.wait_exit();
}

// The rows `text` takes on a screen `columns` wide: each line wider than the screen wraps onto more rows.
size_t screen_rows(const std::string& text, size_t columns) {
  size_t rows = 0;
  for (std::string line : lines_of(text)) {
    line.erase(0, line.rfind('\r') == std::string::npos ? 0 : line.rfind('\r') + 1);
    rows += std::max<size_t>(1, (glyphs(line) + columns - 1) / columns);
  }
  return rows;
}

TEST_CASE("a resize at the answer prompt or between pages takes effect at once, and the pager's line wraps") {
  StateDir state;
  Terminal t({kRunner, "quiz", "--file-order", "--only", "2", "--quick", "--device", "cpu"}, 100, 40,
             state.env());
  REQUIRE(t.expect(kPrompt, 300));
  const unsigned narrow = 34, low = 14;  // the more line, 46 glyphs at most, needs two rows at 34
  t.resize(narrow, low);                 // while the learner reads the question
  size_t from = t.position();
  t.type("a\n");
  REQUIRE(t.expect("quit "));  // the pause line's end, wrapped at 34 columns
  std::vector<std::string> answer_screen = lines_of(t.screen().substr(from, t.position() - from));
  answer_screen.erase(answer_screen.begin());  // the prompt's own line, printed before the resize
  for (std::string line : answer_screen) {
    line.erase(0, line.rfind('\r') == std::string::npos ? 0 : line.rfind('\r') + 1);
    CAPTURE(line);  // the answer screen and the pause line: at the new width (a single long word aside)
    CHECK((glyphs(line) <= narrow || line.find(' ', line.find_first_not_of(' ')) == std::string::npos));
  }
  REQUIRE(t.awaits_key());  // the pause line reads its key: typed now, it answers this pause
  t.type("c\n");            // the checks: many screens at 34x14
  from = t.position();
  REQUIRE(t.expect("back -- "));  // the more line's end, wrapped
  const std::string first = t.screen().substr(from, t.position() - from);
  CAPTURE(first);
  CHECK(screen_rows(first, narrow) <= low);  // the typed key's row, the page, the wrapped more line
  CHECK(first.find("-- more (") != std::string::npos);
  CHECK(glyphs(lines_of(first).back()) <= narrow + 1);  // the more line wrapped (+ the space after it)
  const unsigned tall = 30;
  t.resize(narrow, tall);  // between two pages: the next one fills the taller screen
  from = t.position();
  REQUIRE(t.awaits_key());
  t.type("\n");
  REQUIRE(t.expect_any({"back -- ", "quit "}) >= 0);
  const std::string second = t.screen().substr(from, t.position() - from);
  CAPTURE(second);
  CHECK(screen_rows(second, narrow) > low);
  CHECK(screen_rows(second, narrow) <= tall);
  t.type("q\n");
  t.type("q\n");
  t.wait_exit();
}

TEST_CASE("after --resume the retry advice names every missed question of the track, not only this walk's") {
  StateDir state;
  const std::vector<std::string> env = state.env();
  // First walk: Q2 and Q3 answered wrong.
  {
    Terminal t({kRunner, "quiz", "--file-order", "--only", "2,3", "--quick", "--device", "cpu"}, 80, 40, env);
    answer(t, 'a');
    answer(t, 'a');
    REQUIRE(t.expect("Retry the 2 you missed or skipped: amp-lab quiz --only 2,3"));
    t.wait_exit();
  }
  // Then --resume: Q1 answered right, and the walk left at Q4's prompt.
  Terminal t({kRunner, "quiz", "--file-order", "--resume", "--quick", "--device", "cpu"}, 80, 40, env);
  answer(t, 'a');
  REQUIRE(t.expect(kPrompt, 300));
  t.type("q\n");
  REQUIRE(t.expect("Summary"));
  REQUIRE(t.expect("Score: 1/"));
  t.wait_exit();  // the lines after the score may still be on their way
  const size_t summary = t.screen().rfind("Summary");
  const std::string rest = t.screen().substr(summary);
  CHECK(rest.find("not answered") != std::string::npos);  // Q4: its prompt was shown
  CHECK(rest.find("1 left at its prompt") != std::string::npos);
  CHECK(rest.find("Retry the 2 you missed or skipped: amp-lab quiz --only 2,3") != std::string::npos);
  CHECK(rest.find("Go on where you stopped: amp-lab quiz --only 4,") != std::string::npos);
}

TEST_CASE("--reset --only N forgets question N alone, and amp-lab progress suggests the command as typed") {
  StateDir state;
  {
    Terminal t({kRunner, "quiz", "--file-order", "--only", "2,3", "--quick", "--device", "cpu"}, 80, 40,
               state.env());
    answer(t, 'a');
    answer(t, 'a');
    t.wait_exit();
  }
  std::vector<std::string> env = state.env();
  env.back() = "AMP_LAB_COMMAND=scripts/amp-lab";
  const auto reset = test_support::run_process({kRunner, "quiz", "--reset", "--only", "2"}, 60, env);
  CHECK(reset.code == 0);
  CHECK(reset.out.find("Progress of question 2 forgotten") == 0);
  const auto progress = test_support::run_process({kRunner, "progress"}, 60, env);
  REQUIRE(progress.code == 0);
  CHECK(progress.out.find("retry the missed and skipped: scripts/amp-lab quiz --only 3") !=
        std::string::npos);
  CHECK(progress.out.find("1 of 8 answered") != std::string::npos);
  const auto both = test_support::run_process({kRunner, "quiz", "--reset", "--resume"}, 60, env);
  CHECK(both.code == 2);
}

// The words of `text` with each run of digits as '#': a session's numbers differ from machine to machine
// and its lines break where they do, but its words and their order are the walk's. Of a line, the text
// after its last carriage return is what stays on screen (the lab's progress line is written over so).
std::vector<std::string> masked_words(const std::string& text) {
  std::vector<std::string> words;
  std::string shown;
  for (const std::string& line : lines_of(text)) shown += line.substr(line.rfind('\r') + 1) + "\n";
  std::istringstream in(shown);
  for (std::string w; in >> w;) {
    std::string m;
    for (const char c : w)
      if (!std::isdigit(static_cast<unsigned char>(c)) || m.empty() || m.back() != '#')
        m += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
    words.push_back(m);
  }
  return words;
}

TEST_CASE("README's session excerpt is what the walk shows at 80x40, part for part and in order") {
  // The README leads with a real session: `scripts/amp-lab quiz --only 2`, the answer a typed. Each part of
  // its excerpt (the lines between two "..." lines) must be on the screen of that walk today, in order;
  // --order-seed 0 gives the options the order the excerpt shows.
  std::ifstream readme(AMP_LAB_SOURCE_DIR "/README.md");
  REQUIRE(readme);
  std::vector<std::string> parts(1);
  bool in_excerpt = false, in_block = false;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("<!-- session excerpt", 0) == 0) in_excerpt = true;
    if (line.rfind("<!-- /session excerpt", 0) == 0) break;
    if (!in_excerpt) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      continue;
    }
    if (!in_block) continue;
    if (line.find_first_not_of(' ') != std::string::npos && line.substr(line.find_first_not_of(' ')) == "...")
      parts.emplace_back();
    else
      parts.back() += line + "\n";
  }
  REQUIRE(parts.size() > 1);

  StateDir state;
  Terminal t({kRunner, "quiz", "--only", "2", "--order-seed", "0", "--device", "cpu"}, 80, 40, state.env());
  REQUIRE(t.expect(kPrompt, 300));
  REQUIRE(t.awaits_key());
  t.type("a");
  REQUIRE(t.expect(kPauseEnd));
  t.type("q");
  t.wait_exit();
  const std::vector<std::string> screen = masked_words(t.screen());
  auto from = screen.begin();
  for (const std::string& part : parts) {
    const std::vector<std::string> words = masked_words(part);
    CAPTURE(part);
    const auto at = std::search(from, screen.end(), words.begin(), words.end());
    CHECK_MESSAGE(at != screen.end(), "not on the screen after the parts before it:\n" << t.screen());
    if (at == screen.end()) break;
    from = at + static_cast<std::ptrdiff_t>(words.size());
  }
}

TEST_CASE("a lab run alone lays its report out to the width it has (COLUMNS for a pipe)") {
  for (const char* exe : {"lab02_loss_scaling", "lab14_fp8_scaling"}) {
    CAPTURE(exe);
    const auto r = test_support::run_process({AMP_LAB_BINARY_DIR "/bin/" + std::string(exe), "--quick"}, 120,
                                             {"COLUMNS=60"});
    REQUIRE(r.code == 0);
    size_t widest = 0;
    for (const auto& line : lines_of(r.out)) {
      // Only a single word longer than the screen may stick out.
      if (line.find(' ', line.find_first_not_of(' ')) != std::string::npos)
        widest = std::max(widest, glyphs(line));
    }
    CHECK(widest <= 60);
    CHECK(widest >= 50);  // laid out to the width, not cut to a fixed narrow one
  }
}

TEST_CASE("a lab's --help shows its neutral heading, not its answer-stating title") {
  for (const auto& decl : lab::catalog()) {
    CAPTURE(decl.id);
    const auto r = test_support::run_process({AMP_LAB_BINARY_DIR "/bin/" + decl.executable(), "--help"}, 60);
    REQUIRE(r.code == 0);
    CHECK(r.out.find(decl.heading) != std::string::npos);
    CHECK(r.out.find(decl.title) == std::string::npos);
  }
}

TEST_CASE("what Q3 says after its answer does not answer Q7, which comes later in the same walk") {
  const runner::Quiz quiz = all_questions();
  const auto by_id = [&](const std::string& id) {
    const auto q = std::find_if(quiz.questions.begin(), quiz.questions.end(),
                                [&](const runner::Question& x) { return x.id == id; });
    REQUIRE(q != quiz.questions.end());
    return *q;
  };
  const runner::Question q3 = by_id("bf16-vs-fp16"), q7 = by_id("bf16-less-scaling");
  std::string said = q3.explanation;
  for (const auto& [index, why] : q3.why_not) said += " " + why;
  const auto score = test_support::leak_score(said, q7.prompt, q7.options, q7.answer);
  CAPTURE(said);
  CHECK_FALSE(score.gives_away());
}

}  // namespace test_walk_screen
