// The walk at a terminal as a person meets it, on a pseudo-terminal of a given size: each question's
// screen, from its banner to its prompt, fits the terminal's 40 rows at 80 and 120 columns, with the terms
// of its options glossed before the prompt, and a term glossed once (in a later question or walk only the
// t key shows it); a key acts without Enter, and a key typed before the walk reads it is echoed once, at
// the prompt that reads it; the terminal's mode is restored exactly on every way out.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <termios.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "amp_lab_paths.h"
#include "runner/catalog_labs.h"
#include "runner/glossary.h"
#include "runner/quiz.h"
#include "support/temp_folder.h"
#include "support/terminal.h"

namespace test_walk_keys {
namespace {

namespace fs = std::filesystem;
using test_support::glyphs;
using test_support::lines_of;
using test_support::Terminal;

const std::string kRunner = AMP_LAB_BINARY_DIR "/bin/amp-lab";
const std::string kPrompt = "Your answer [a-d;";
const std::string kPauseEnd = "q quit ";  // the pause line's last words, before the learner types
constexpr double kLabSeconds = 120;       // a quick lab's run, with room for a loaded machine

// A private state folder: the walk's saved progress (and the terms it showed) go there.
struct StateDir : test_support::TempFolder {
  StateDir() : TempFolder("walk_keys") {}
  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + path.string(), "AMP_LAB_COMMAND=amp-lab"};
  }
};

const runner::Quiz& quiz() {
  static const runner::Quiz q = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  return q;
}

const runner::Glossary& glossary() {
  static const runner::Glossary g = runner::load_glossary(AMP_LAB_SOURCE_DIR "/glossary.yaml");
  return g;
}

// The rows `text` takes on a terminal `columns` wide: what a line overwrote with '\r' is gone, and a line
// wider than the terminal wraps.
size_t rows_of(const std::string& text, size_t columns) {
  size_t rows = 0;
  for (std::string line : lines_of(text)) {
    if (const size_t cr = line.rfind('\r'); cr != std::string::npos) line.erase(0, cr + 1);
    rows += std::max<size_t>(1, (glyphs(line) + columns - 1) / columns);
  }
  return rows;
}

// The names of the terms `screen` glosses: the "  name: definition" lines under a "Terms:" line (a lab's
// own lines may start the same way).
std::set<std::string> glossed_on(const std::string& screen) {
  std::set<std::string> names;
  bool in_terms = false;
  for (std::string line : lines_of(screen)) {
    if (const size_t cr = line.rfind('\r'); cr != std::string::npos) line.erase(0, cr + 1);
    if (line == "Terms:") {
      in_terms = true;
      continue;
    }
    in_terms = in_terms && line.rfind("  ", 0) == 0;
    if (!in_terms) continue;
    for (const runner::Term& term : glossary().terms())
      if (line.rfind("  " + term.name + ": ", 0) == 0) names.insert(term.name);
  }
  return names;
}

// Waits for the next question's prompt; returns its screen, from its banner to the prompt's end.
std::string next_screen(Terminal& t) {
  REQUIRE(t.expect(kPrompt, kLabSeconds));
  REQUIRE(t.expect("]: "));
  const size_t banner = t.screen().rfind("━━ ", t.position());
  REQUIRE(banner != std::string::npos);
  return t.screen().substr(banner, t.position() - banner);
}

// Walks each track from a fresh start (the most terms to gloss on its first screens) at `columns` x 40:
// every screen fits, the options' terms are glossed before the prompt, and a letter, then o, act alone.
void walk_every_track(unsigned columns) {
  std::string measured;
  for (const runner::Track& track : quiz().tracks) {
    const runner::Quiz questions = runner::select_track(quiz(), track.id);
    StateDir state;
    Terminal t({kRunner, "quiz", "--track", track.id, "--quick", "--device", "cpu"}, columns, 40,
               state.env());
    std::set<std::string> glossed;  // in this walk so far
    for (const runner::Question& q : questions.questions) {
      CAPTURE(q.number);
      const std::string screen = next_screen(t);
      const size_t rows = rows_of(screen, columns);
      measured += " Q" + std::to_string(q.number) + ":" + std::to_string(rows);
      CHECK(rows <= 40);
      CHECK(screen.find("Q" + std::to_string(q.number) + ". ") != std::string::npos);
      // Every term the options use is glossed before the prompt, here or on an earlier screen (but a term
      // of one option alone: its gloss would point at it), and none twice in the walk.
      for (const std::string& name : glossed_on(screen)) CHECK_MESSAGE(glossed.insert(name).second, name);
      std::map<std::string, int> options_using;
      for (const auto& o : q.options)
        for (const runner::Term* term : glossary().terms_in(o)) {
          std::string lower = o, name = term->name;  // named as the gloss names it
          for (auto* text : {&lower, &name})
            std::transform(text->begin(), text->end(), text->begin(),
                           [](unsigned char c) { return std::tolower(c); });
          options_using[term->name] += lower.find(name) != std::string::npos;
        }
      for (const auto& [name, n] : options_using)
        if (n >= 2) CHECK_MESSAGE(glossed.count(name), name);
      // One key, no Enter: the answer, then o at the pause.
      t.type("a");
      REQUIRE(t.expect(kPauseEnd));
      const size_t pause = t.position();
      t.type("o");
      REQUIRE(t.expect(kPauseEnd));
      const std::string others = t.screen().substr(pause, t.position() - pause);
      CHECK(std::count(others.begin(), others.end(), '\n') >= 2);
      CHECK(others.find("\nNot ") != std::string::npos);
      t.type("\r");  // Enter, as a terminal sends it
    }
    REQUIRE(t.expect("Score: ", 60));
    CHECK(t.wait_exit() == 0);
  }
  MESSAGE(columns << "x40, rows from each banner to its prompt:" << measured);
}

}  // namespace

TEST_CASE(
    "at 80x40 every question's screen fits from banner to prompt, and a letter and o act without Enter") {
  walk_every_track(80);
}

TEST_CASE(
    "at 120x40 every question's screen fits from banner to prompt, and a letter and o act without Enter") {
  walk_every_track(120);
}

TEST_CASE("every question asked alone, from a fresh start, fits its screen at 80x40 and at 120x40") {
  // Alone, a question glosses every term on its own screen (no earlier question glossed any): the most a
  // screen holds before its prompt.
  for (const unsigned columns : {80u, 120u}) {
    std::string measured;
    for (const runner::Question& q : quiz().questions) {
      CAPTURE(q.number);
      StateDir state;
      Terminal t({kRunner, "quiz", "--track", "all", "--only", std::to_string(q.number), "--quick",
                  "--device", "cpu"},
                 columns, 40, state.env());
      const size_t rows = rows_of(next_screen(t), columns);
      measured += " Q" + std::to_string(q.number) + ":" + std::to_string(rows);
      CHECK(rows <= 40);
      t.type("q");
      CHECK(t.wait_exit() == 0);
    }
    MESSAGE(columns << "x40, each question alone:" << measured);
  }
}

TEST_CASE("a term glossed in one question is not glossed again in a later question or walk, and t shows it") {
  StateDir state;
  std::set<std::string> first, again;
  {
    Terminal t({kRunner, "quiz", "--only", "1,2", "--quick", "--device", "cpu"}, 80, 40, state.env());
    first = glossed_on(next_screen(t));
    REQUIRE_FALSE(first.empty());
    t.type("s");
    REQUIRE(t.expect(kPauseEnd));
    t.type("\n");
    const std::string second = next_screen(t);
    // The terms of the first screen that the second uses again: not glossed on it.
    for (const runner::Term* term : glossary().terms_in(second))
      if (first.count(term->name)) again.insert(term->name);
    REQUIRE_FALSE(again.empty());
    for (const std::string& name : again) CHECK_MESSAGE(glossed_on(second).count(name) == 0, name);
    // t at the prompt shows every term of the question, those glossed before included.
    const size_t from = t.position();
    t.type("t");
    REQUIRE(t.expect(kPrompt));
    const std::set<std::string> shown = glossed_on(t.screen().substr(from));
    for (const std::string& name : again) CHECK_MESSAGE(shown.count(name) == 1, name);
    t.type("q");
    CHECK(t.wait_exit() == 0);
  }
  // A later walk remembers them (the progress file's "terms_shown").
  Terminal t({kRunner, "quiz", "--only", "2", "--quick", "--device", "cpu"}, 80, 40, state.env());
  const std::string screen = next_screen(t);
  for (const std::string& name : first) CHECK_MESSAGE(glossed_on(screen).count(name) == 0, name);
  t.type("q");
  CHECK(t.wait_exit() == 0);
}

TEST_CASE("a key is awaited in raw mode, and the terminal is back in line mode after q, Ctrl-C and Ctrl-Z") {
  StateDir state;
  {
    Terminal t({kRunner, "quiz", "--only", "2,3", "--quick", "--device", "cpu"}, 80, 40, state.env(),
               /*as_job=*/true);
    next_screen(t);
    CHECK(t.awaits_key());
    // Ctrl-Z: stopped in line mode; continued (fg), raw mode again and the prompt shown again.
    t.type("\x1a");
    REQUIRE(t.expect("[job stopped; terminal in line mode]"));
    t.signal_foreground(SIGCONT);
    REQUIRE(t.expect(kPrompt));
    CHECK(t.awaits_key());
    t.type("b");
    REQUIRE(t.expect(kPauseEnd));
    CHECK(t.awaits_key());
    t.type("q");
    REQUIRE(t.expect("Stopped (quit)."));
    REQUIRE(t.expect("[job ended; terminal in line mode]"));
    CHECK(t.wait_exit() == 0);
  }
  Terminal t({kRunner, "quiz", "--only", "2,3", "--quick", "--device", "cpu"}, 80, 40, state.env(),
             /*as_job=*/true);
  next_screen(t);
  CHECK(t.awaits_key());
  t.type("\x03");  // Ctrl-C at the prompt
  REQUIRE(t.expect("Stopped (interrupted)."));
  REQUIRE(t.expect("[job ended; terminal in line mode]"));
  CHECK(t.wait_exit() == 128 + SIGINT);
}

// A folder of labs for AMP_LAB_LAB_DIR in which lab 02 waits, once started, until release() (at most 5
// minutes): the walk is then running a lab, not reading a key, for as long as the test needs. Lab 03 runs
// at once.
struct HeldLab : test_support::TempFolder {
  HeldLab() : TempFolder("walk_keys_lab") {
    const std::string real = AMP_LAB_BINARY_DIR "/bin/";
    std::ofstream(file("lab02_loss_scaling"))
        << "#!/bin/sh\n: > '" << file("started") << "'\n"
        << "i=0; while [ ! -e '" << file("go") << "' ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done\n"
        << "exec '" << real << "lab02_loss_scaling' \"$@\"\n";
    fs::permissions(file("lab02_loss_scaling"), fs::perms::owner_all);
    fs::create_symlink(real + "lab03_number_formats", file("lab03_number_formats"));
  }
  // The walk's environment: these labs, and no report cache (a cached report would not run the lab).
  std::vector<std::string> env(const StateDir& state) const {
    std::vector<std::string> e = state.env();
    e.push_back("AMP_LAB_LAB_DIR=" + path.string());
    e.push_back("AMP_LAB_REPORT_CACHE=");
    return e;
  }
  // Reads the terminal until lab 02 has started.
  bool started(Terminal& t) const {
    for (int k = 0; k < 1200 && !fs::exists(file("started")); ++k) t.expect_any({}, 0.1);
    return fs::exists(file("started"));
  }
  void release() const { std::ofstream(file("go")) << "go\n"; }
};

// What the terminal printed in the next `seconds` (the keys' echo by the terminal itself, when the walk
// prints nothing meanwhile).
std::string printed_within(Terminal& t, double seconds) {
  const size_t from = t.screen().size();
  t.expect_any({}, seconds);
  return t.screen().substr(from);
}

// Whether the terminal's echo goes off within `seconds`.
bool echo_off_within(Terminal& t, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (t.mode().c_lflag & ECHO)
    if (std::chrono::steady_clock::now() > end || t.expect_any({}, 0.05) != -1) return false;
  return true;
}

// The line the last match ended on, whole: the prompt and the reply the walk echoed after it.
std::string line_at(const Terminal& t, size_t at) {
  const size_t begin = t.screen().rfind('\n', at == 0 ? 0 : at - 1);
  const size_t end = t.screen().find('\n', at);
  const size_t from = begin == std::string::npos ? 0 : begin + 1;
  return t.screen().substr(from, end == std::string::npos ? std::string::npos : end - from);
}

// The terminal's mode as the pty began (a shell's line mode): the same flags, the same control keys.
void check_mode_as_before(const Terminal& t) {
  const termios now = t.mode(), before = t.first_mode();
  CHECK((now.c_lflag & ECHO) != 0);
  CHECK((now.c_lflag & ICANON) != 0);
  CHECK(now.c_lflag == before.c_lflag);
  CHECK(now.c_iflag == before.c_iflag);
  CHECK(now.c_oflag == before.c_oflag);
  CHECK(std::equal(std::begin(now.c_cc), std::end(now.c_cc), std::begin(before.c_cc)));
}

TEST_CASE("a key typed while a lab runs, or just as its prompt appears, is echoed once, at that prompt") {
  StateDir state;
  HeldLab labs;
  Terminal t({kRunner, "quiz", "--file-order", "--only", "2,3", "--quick", "--device", "cpu"}, 80, 40,
             labs.env(state));
  REQUIRE(labs.started(t));
  // Typed while lab 02 runs: the terminal does not echo it (the walk prints nothing else but its running
  // line meanwhile, which has no capital letter); a capital, so that no other text on the line matches.
  t.type("B");
  const std::string meanwhile = printed_within(t, 1.0);
  CAPTURE(meanwhile);
  CHECK(meanwhile.find('B') == std::string::npos);
  labs.release();
  REQUIRE(t.expect(kPrompt, kLabSeconds));
  REQUIRE(t.expect("]: "));
  // The walk reads it at the prompt and echoes it there, once; the answer is taken (no second prompt).
  REQUIRE(t.expect(kPauseEnd));
  const std::string prompt_line = line_at(t, t.screen().rfind(kPrompt, t.position()));
  CHECK(prompt_line.substr(prompt_line.rfind("]: ")) == "]: B");
  const size_t answered = t.screen().rfind(kPrompt, t.position());
  CHECK(t.screen().find(kPrompt, answered + 1) == std::string::npos);
  CHECK(t.screen().find("Please answer", answered) == std::string::npos);
  // Typed as soon as the next prompt shows, perhaps before the walk's read: echoed once all the same.
  t.type("\r");
  REQUIRE(t.expect(kPrompt, kLabSeconds));
  REQUIRE(t.expect("]: "));
  t.type("C");
  REQUIRE(t.expect(kPauseEnd));
  const std::string second_line = line_at(t, t.screen().rfind(kPrompt, t.position()));
  CHECK(second_line.substr(second_line.rfind("]: ")) == "]: C");
  t.type("q");
  CHECK(t.wait_exit() == 0);
  check_mode_as_before(t);
}

TEST_CASE(
    "the terminal's mode is as before the walk after its end, q, end of input, Ctrl-C, SIGTERM and SIGHUP") {
  const std::vector<std::string> walk = {kRunner, "quiz",    "--file-order", "--only",
                                         "2",     "--quick", "--device",     "cpu"};
  SUBCASE("the walk's end") {
    StateDir state;
    Terminal t(walk, 80, 40, state.env());
    REQUIRE(t.expect(kPrompt, kLabSeconds));
    t.type("a");
    REQUIRE(t.expect(kPauseEnd));
    t.type("\r");
    REQUIRE(t.expect("Score: "));
    CHECK(t.wait_exit() == 0);
    check_mode_as_before(t);
  }
  SUBCASE("q at the prompt") {
    StateDir state;
    Terminal t(walk, 80, 40, state.env());
    REQUIRE(t.expect(kPrompt, kLabSeconds));
    t.type("q");
    REQUIRE(t.expect("Stopped (quit)."));
    CHECK(t.wait_exit() == 0);
    check_mode_as_before(t);
  }
  SUBCASE("end of input (Ctrl-D) at the prompt") {
    StateDir state;
    Terminal t(walk, 80, 40, state.env());
    REQUIRE(t.expect(kPrompt, kLabSeconds));
    t.type("\x04");
    CHECK(t.wait_exit() >= 0);
    check_mode_as_before(t);
  }
  SUBCASE("end of input (Ctrl-D) typed while a lab runs, taken at the prompt") {
    StateDir state;
    HeldLab labs;
    Terminal t(walk, 80, 40, labs.env(state));
    REQUIRE(labs.started(t));
    REQUIRE(echo_off_within(t, 10));  // line mode without echo: the line discipline keeps Ctrl-D as a NUL
    t.type("\x04");
    labs.release();
    REQUIRE(t.expect("Stopped (end of input).", kLabSeconds));
    CHECK(t.wait_exit() == 0);
    check_mode_as_before(t);
  }
  SUBCASE("Ctrl-C at the prompt") {
    StateDir state;
    Terminal t(walk, 80, 40, state.env());
    REQUIRE(t.expect(kPrompt, kLabSeconds));
    REQUIRE(t.awaits_key());
    t.type("\x03");
    REQUIRE(t.expect("Stopped (interrupted)."));
    CHECK(t.wait_exit() == 128 + SIGINT);
    check_mode_as_before(t);
  }
  SUBCASE("SIGTERM while a lab runs (no key awaited)") {
    StateDir state;
    HeldLab labs;
    Terminal t(walk, 80, 40, labs.env(state));
    REQUIRE(labs.started(t));
    t.signal_foreground(SIGTERM);
    REQUIRE(t.expect("Stopped (terminated)."));
    CHECK(t.wait_exit() == 128 + SIGTERM);
    check_mode_as_before(t);
  }
  SUBCASE("SIGHUP at the prompt") {
    StateDir state;
    Terminal t(walk, 80, 40, state.env());
    REQUIRE(t.expect(kPrompt, kLabSeconds));
    REQUIRE(t.awaits_key());
    t.signal_foreground(SIGHUP);
    REQUIRE(t.expect("Stopped (hang-up)."));
    CHECK(t.wait_exit() == 128 + SIGHUP);
    check_mode_as_before(t);
  }
}

TEST_CASE("Ctrl-Z while a lab runs gives the shell its line mode, and after fg a key typed ahead is taken") {
  StateDir state;
  HeldLab labs;
  Terminal t({kRunner, "quiz", "--file-order", "--only", "2", "--quick", "--device", "cpu"}, 80, 40,
             labs.env(state), /*as_job=*/true);
  REQUIRE(labs.started(t));
  t.type("\x1a");
  REQUIRE(t.expect("[job stopped; terminal in line mode]"));
  t.signal_foreground(SIGCONT);
  REQUIRE(echo_off_within(t, 10));  // fg: the walk's mode again (before that, the shell's echo is right)
  t.type("B");
  const std::string meanwhile = printed_within(t, 1.0);
  CAPTURE(meanwhile);
  CHECK(meanwhile.find('B') == std::string::npos);
  labs.release();
  REQUIRE(t.expect(kPrompt, kLabSeconds));
  REQUIRE(t.expect(kPauseEnd));
  const std::string prompt_line = line_at(t, t.screen().rfind(kPrompt, t.position()));
  CHECK(prompt_line.substr(prompt_line.rfind("]: ")) == "]: B");
  t.type("q");
  REQUIRE(t.expect("[job ended; terminal in line mode]"));
  CHECK(t.wait_exit() == 0);
  check_mode_as_before(t);
}

}  // namespace test_walk_keys
