// The amp-lab command, driven as a user drives it: real binary, scripted stdin, output and exit codes.
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "runner/catalog_labs.h"
#include "runner/quiz.h"
#include "support/answer_leak.h"
#include "support/process.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Saved progress goes to a folder of this test run, never to the user's ~/.local/state: every amp-lab the
// tests start inherits XDG_STATE_HOME.
struct StateHome {
  fs::path path = fs::temp_directory_path() / ("amp_lab_cli_state_" + std::to_string(::getpid()));
  StateHome() {
    fs::create_directories(path);
    ::setenv("XDG_STATE_HOME", path.c_str(), 1);
  }
  ~StateHome() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
const StateHome state_home;

// Per process, so that test runs in other clones at the same time do not share files.
fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("amp_lab_cli_" + std::to_string(::getpid()) + "_" + name);
}

// Runs `build/bin/<program> <args>` with `input` on stdin; NO_COLOR keeps the output plain.
Result run(const std::string& args, const std::string& input = "", const std::string& program = "amp-lab",
           const std::string& env = "") {
  static int n = 0;
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(n++);
  const fs::path in = scratch(tag + ".in"), out = scratch(tag + ".out"), err = scratch(tag + ".err");
  std::ofstream(in) << input;
  const std::string cmd = "NO_COLOR=1 " + env + " \"" AMP_LAB_BINARY_DIR "/bin/" + program + "\" " + args +
                          " < \"" + in.string() + "\" > \"" + out.string() + "\" 2> \"" + err.string() + "\"";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  fs::remove(in), fs::remove(out), fs::remove(err);
  return r;
}

// Runs a shell script (for redirections run() does not make); returns its exit code. The script is bash's
// argument as it is, not put inside another shell's quotes, so the quoting in it is the only one.
int sh(const std::string& script) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `word` as one word for the shell, in single quotes: the clone's path may hold spaces or any letter.
std::string q(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The text with every run of spaces and newlines made one space: wrapped prose compares with its source.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\n';
    if (!blank)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  return out;
}

// No byte a terminal would act on: control characters other than newline.
bool inert(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
  return true;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
  return n;
}

// Two quick questions: Q3 (number formats, answer c) and Q8 (autocast policy, answer d).
const std::string kTwo = "quiz --quick --device cpu --file-order --only 3,8";

// The project's quiz file, its labs checked against labs/catalog.cpp: counts come from it, never from
// numbers written into a test.
const runner::Quiz& project_quiz() {
  static const runner::Quiz quiz = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  return quiz;
}

// The questions of the default track (`amp-lab quiz` without --track).
const runner::Quiz& default_track() {
  static const runner::Quiz track = runner::select_track(project_quiz(), project_quiz().tracks.front().id);
  return track;
}

}  // namespace

TEST_CASE("scripted right answers score full marks and exit 0") {
  const auto r = run(kTwo + " --answers cd");
  CHECK(r.code == 0);
  CHECK(count(r.out, "Right!") == 2);
  CHECK(has(r.out, "Score: 2/2 right"));
  CHECK(has(r.out, "verdict: PASS"));  // the labs' reports were shown
  CHECK(has(r.out, "Q3. What advantage does bfloat16 have over FP16?"));
}

TEST_CASE("scripted wrong answers are marked wrong with the correct option and an explanation") {
  const auto r = run(kTwo + " --answers ab");
  CHECK(r.code == 0);  // wrong answers are not an error: every lab's checks held
  CHECK(count(r.out, "Not quite") == 2);
  CHECK(has(r.out, "The answer is c) It has the same wide exponent range as FP32"));
  CHECK(count(r.out, "Why: ") == 2);
  CHECK(has(r.out, "Score: 0/2 right (2 wrong, 0 skipped)"));
}

TEST_CASE(
    "interactive input: invalid answers prompt again, upper case counts, h shows the hint, and --json counts "
    "it") {
  const fs::path json = scratch("hints.json");
  const auto r = run(kTwo + " --json " + json.string(), "x\n\nh\nC\n  d \n");
  CHECK(r.code == 0);
  CHECK(count(r.out, "Please answer with one letter a-d") == 2);
  CHECK(has(r.out, "Hint: "));
  CHECK(has(r.out, "Score: 2/2 right"));
  const auto j = nlohmann::json::parse(slurp(json));
  fs::remove(json);
  REQUIRE(j["questions"].size() == 2);
  CHECK(j["questions"][0]["hints"] == 1);
  CHECK(j["questions"][1]["hints"] == 0);
}

TEST_CASE("s skips a question and the summary says so") {
  const auto r = run(kTwo, "s\nd\n");
  CHECK(has(r.out, "Skipped."));
  CHECK(has(r.out, "Score: 1/2 right (0 wrong, 1 skipped)"));
}

TEST_CASE("end of input mid-quiz stops cleanly with the partial score") {
  const auto r = run(kTwo, "c\n");
  CHECK(r.code == 0);
  CHECK(has(r.out, "Stopped (end of input)."));
  // The second question's prompt was shown: left there, not "not reached".
  CHECK(has(r.out, "Score: 1/2 right (0 wrong, 0 skipped, 1 left at its prompt, 0 not reached)"));
  CHECK(r.err.empty());
}

TEST_CASE("q quits with the summary") {
  const auto r = run(kTwo, "q\n");
  CHECK(r.code == 0);
  CHECK(has(r.out, "Stopped (quit)."));
  CHECK(has(r.out, "Summary"));
  CHECK(has(r.out, "Score: 0/2 right"));
}

TEST_CASE(
    "before the prompt the walk shows what the lab measured, and its checks and title only after the "
    "answer") {
  const auto lab = run("run number-formats --quick --json");
  REQUIRE(lab.code == 0);
  const auto report = nlohmann::json::parse(lab.out);
  REQUIRE(report["checks"].size() > 0);
  const auto r = run("quiz --quick --device cpu --only 3 --file-order --answers c");
  REQUIRE(r.code == 0);
  const auto prompt = r.out.find("Your answer");
  REQUIRE(prompt != std::string::npos);
  const std::string before = r.out.substr(0, prompt), after = r.out.substr(prompt);
  CHECK(has(before, "70000"));  // the measurements are there
  CHECK_FALSE(has(before, report["title"].get<std::string>()));
  CHECK_FALSE(has(before, "PASS"));
  CHECK_FALSE(has(before, "verdict"));
  CHECK(has(after, report["title"].get<std::string>()));
  for (const auto& check : report["checks"]) {
    const std::string claim = check["claim"];
    CAPTURE(claim);
    CHECK_FALSE(has(squeeze(before), squeeze(claim)));  // laid out to the width: compared word by word
    CHECK(has(squeeze(after), squeeze(claim)));
  }
  CHECK(after.find("The answer is c)") < after.find("verdict: PASS"));  // the answer first, then the checks
  CHECK_FALSE(has(r.out, "Enter: next lab"));                           // scripted: no pause
}

TEST_CASE("--reveal shows the answer key, and --json writes every lab of the default track") {
  const int n = static_cast<int>(default_track().questions.size());
  REQUIRE(n > 0);
  const fs::path json = scratch("walk.json");
  const auto r = run("quiz --reveal --quick --device cpu --json " + json.string());
  CHECK(r.code == 0);
  CHECK(count(r.out, "<- answer") == n);
  CHECK(count(r.out, "Why: ") == n);
  REQUIRE(fs::exists(json));
  const auto j = nlohmann::json::parse(slurp(json));
  fs::remove(json);
  REQUIRE(j["questions"].size() == static_cast<size_t>(n));
  for (const auto& q : j["questions"]) {
    CAPTURE(q["lab"].get<std::string>());
    CHECK(q["report"]["passed"] == true);
    CHECK(q["report"]["observations"].size() > 0);
    CHECK(q["report"]["checks"].size() > 0);
  }
  CHECK(j["all_checks_passed"] == true);
}

TEST_CASE("--track recipes walks questions 9 to 12, each lab's checks holding, and list shows the track") {
  const fs::path json = scratch("recipes.json");
  const auto r = run("quiz --track recipes --reveal --quick --device cpu --json " + json.string());
  CHECK(r.code == 0);
  CHECK(has(r.out, "Track recipes: "));
  CHECK(count(r.out, "<- answer") == 4);
  REQUIRE(fs::exists(json));
  const auto j = nlohmann::json::parse(slurp(json));
  fs::remove(json);
  CHECK(j["track"] == "recipes");
  REQUIRE(j["questions"].size() == 4);
  int number = 9;
  for (const auto& q : j["questions"]) {
    CAPTURE(q["lab"].get<std::string>());
    CHECK(q["number"] == number++);
    CHECK(q["report"]["passed"] == true);
    CHECK_FALSE(has(q["explanation"].get<std::string>(), "not measured"));
  }
  const auto list = run("list");
  const auto at = list.out.find("track recipes");
  REQUIRE(at != std::string::npos);
  for (const char* lab :
       {"gradient-accumulation", "gradient-penalty", "multiple-optimizers", "custom-autograd"})
    CHECK(list.out.find(lab) > at);
  const auto outside = run("quiz --track recipes --only 3");
  CHECK(outside.code == 2);
  CHECK(has(outside.err, "--only '3': expected question numbers from 9 to 12"));
}

TEST_CASE("amp-lab run LAB --json prints the lab's report as JSON") {
  const auto r = run("run number-formats --quick --json");
  CHECK(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["lab"] == "number-formats");
  CHECK(j["passed"] == true);
}

TEST_CASE("amp-lab list names every track and lab of the quiz, and info reports the LibTorch build") {
  const auto list = run("list");
  CHECK(list.code == 0);
  for (const auto& track : project_quiz().tracks) CHECK(has(list.out, "track " + track.id + ":"));
  for (const auto& q : project_quiz().questions) {
    CAPTURE(q.lab);
    CHECK(has(list.out, q.lab));
    CHECK(has(list.out, lab::find_decl(q.lab)->executable()));
  }
  const auto info = run("info");
  CHECK(info.code == 0);
  CHECK(has(info.out, "LibTorch"));
  CHECK(has(info.out, "avx512_bf16"));
}

// A quiz file with two tracks over two quick labs: Q1 number-formats (core), Q2 autocast-policy (other).
fs::path two_track_quiz() {
  const fs::path path = scratch("tracks.yaml");
  std::ofstream(path) << R"(title: Two tracks
tracks:
  - id: core
    title: The default track
  - id: other
    title: The second track
questions:
  - id: formats
    lab: number-formats
    prompt: Which?
    options: [A, B, C, D]
    answer: c
    hint: Look.
    explanation: Because.
  - id: policy
    track: other
    lab: autocast-policy
    prompt: What?
    options: [A, B, C, D]
    answer: d
    hint: Look again.
    explanation: Because, again.
)";
  return path;
}

TEST_CASE("--track walks only that track's questions, numbered as in the file, and all walks every track") {
  const fs::path quiz = two_track_quiz();
  const std::string base = "quiz --quick --device cpu --quiz " + quiz.string();
  const auto core = run(base + " --file-order --answers c");  // the default track
  CHECK(core.code == 0);
  CHECK(has(core.out, "Q1. Which?"));
  CHECK_FALSE(has(core.out, "Q2. What?"));
  CHECK(has(core.out, "Score: 1/1 right"));

  const auto other = run(base + " --track other --file-order --answers d");
  CHECK(other.code == 0);
  CHECK(has(other.out, "Track other: The second track (1 question)"));
  CHECK(has(other.out, "Q2. What?"));
  CHECK_FALSE(has(other.out, "Q1. Which?"));
  CHECK(has(other.out, "Score: 1/1 right"));

  const auto only = run(base + " --track other --only 2 --file-order --answers d");
  CHECK(only.code == 0);
  CHECK(has(only.out, "Q2. What?"));
  const auto outside = run(base + " --track other --only 1 --file-order --answers d");
  CHECK(outside.code == 2);
  CHECK(has(outside.err, "--only '1': expected question numbers from 2 to 2"));

  const auto all = run(base + " --track all --file-order --answers cd");
  CHECK(all.code == 0);
  CHECK(has(all.out, "Q1. Which?"));
  CHECK(has(all.out, "Q2. What?"));
  CHECK(has(all.out, "Score: 2/2 right"));

  const auto list = run("list --quiz " + quiz.string());
  CHECK(list.code == 0);
  CHECK(has(list.out, "track core: The default track  (default: amp-lab quiz)"));
  CHECK(has(list.out, "track other: The second track  (amp-lab quiz --track other)"));
  CHECK(list.out.find("number-formats") < list.out.find("track other"));
  CHECK(list.out.find("autocast-policy") > list.out.find("track other"));
  CHECK(has(list.out, "track all"));
  fs::remove(quiz);
}

TEST_CASE("bad input gets one clear line on stderr and exit code 2") {
  struct Case {
    std::string args, message;
  };
  const fs::path bad_quiz = scratch("bad.yaml");
  std::ofstream(bad_quiz) << "title: T\nquestions:\n  - id: x\n";
  const auto& core = default_track().questions;
  REQUIRE(core.size() >= 2);
  const std::string range = "expected question numbers from " + std::to_string(core.front().number) + " to " +
                            std::to_string(core.back().number);
  const std::string beyond = std::to_string(core.back().number + 1);
  const Case cases[] = {
      {"frobnicate", "unknown command 'frobnicate'"},
      {"quiz --frob", "frob"},
      {"quiz --only " + beyond, "--only '" + beyond + "': " + range},
      {"quiz --only 1,x", "--only '1,x'"},
      {"quiz --track nope", "--track: no track named 'nope' (tracks: core"},
      {"list --frob", "frob"},
      {"quiz --file-order --answers ab" + std::string(core.size(), 'a'),
       "--answers has " + std::to_string(core.size() + 2) + " letters for " + std::to_string(core.size()) +
           " questions"},
      {"quiz --file-order --answers " + std::string(core.size(), 'z'), "'z' is not one of a, b, c, d or s"},
      {"quiz --only 3 --file-order --answers abcdabcd",
       "--answers has 8 letters for 1 question\n"},  // not "1 questions"
      {"quiz --only 3,4 --file-order --answers a", "--answers has 1 letter for 2 questions\n"},
      {"quiz --only 3 --file-order --answers \xc3\xa9",
       "--answers: '\xc3\xa9' is not one of a, b, c, d or s"},  // é, not '\xc3'
      {"quiz --dtype fp32", "--dtype must be fp16 or bf16, got 'fp32'"},
      {"quiz --device tpu", "--device must be auto, cpu or cuda, got 'tpu'"},
      {"quiz --seed -3", "--seed must be a non-negative integer below 2^64, got '-3'"},
      {"run 3 --seed 1e9", "--seed must be a non-negative integer below 2^64, got '1e9'"},
      {"quiz --seed \" -1\"", "--seed must be a non-negative integer below 2^64, got ' -1'"},
      {"quiz --only 3,", "--only '3,': " + range},
      {"info --bogus", "bogus"},
      {"info extra", "unexpected argument 'extra'"},
      {"list extra", "unexpected argument 'extra'"},
      {"run 3 --flip=maybe", "maybe"},
      {"quiz --quiz /tmp", "/tmp: cannot read the quiz file: it is a directory, not a quiz file"},
      {"quiz --seed=" + std::string(40000, '1'), "is 40007 bytes long; the limit is 4200"},
      {"--" + std::string(30000, 'y'), "is 30002 bytes long"},
      {"run 3 -" + std::string(30000, 'q'), "is 30001 bytes long"},
      {"quiz --quiz " + std::string(40000, 'p'), "is 40000 bytes long"},
      {"quiz --quiz " + bad_quiz.string(),
       bad_quiz.string() + ":3:5: questions[0].prompt: missing (required)"},
      {"run no-such-lab", "no lab named 'no-such-lab'"},
      {"run", "which lab?"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run(c.args);
    CHECK(r.code == 2);
    CHECK(has(r.err, c.message));
    CHECK(count(r.err, "\n") == 1);  // one line, no stack trace
    CHECK(r.err.size() < 600);       // a 40 KB argument is not echoed whole
  }
  fs::remove(bad_quiz);
}

TEST_CASE("a flag's value is honoured: --flip=false, --json=false, --quick=0, --reveal=false") {
  CHECK(run("run number-formats --quick --flip").code == 1);  // the counterfactual fails the checks
  CHECK(run("run number-formats --quick --flip=false").code == 0);
  const auto text = run("run number-formats --quick --json=false");
  CHECK(text.code == 0);
  CHECK(has(text.out, "verdict: PASS"));
  CHECK(text.out.rfind("{", 0) != 0);                                  // not JSON
  const auto reveal_off = run(kTwo + " --reveal=false --answers cd");  // --reveal would refuse --answers
  CHECK(reveal_off.code == 0);
  CHECK(has(reveal_off.out, "Score: 2/2 right"));
  CHECK(has(run("run number-formats --quick").out, "quick mode"));
  CHECK_FALSE(has(run("run number-formats --quick=0").out, "quick mode"));
}

TEST_CASE("hostile names and answers come back escaped, never raw into the terminal") {
  const auto lab = run("run \"$(printf \"\\033[2J\\033[Hpwned\")\"");
  CHECK(lab.code == 2);
  CHECK(has(lab.err, "no lab named '\\x1b[2J\\x1b[Hpwned'"));
  CHECK(inert(lab.err));
  const auto prompt = run("quiz --quick --device cpu --file-order --only 3", "\x1b[2J\nc\n");
  CHECK(has(prompt.out, "got '\\x1b[2J'."));
  CHECK(inert(prompt.out));
  const auto option = run("\"$(printf \"--\\033[2J\")\"");
  CHECK(option.code == 2);
  CHECK(inert(option.err));
}

TEST_CASE("a quiz file that is not UTF-8 is refused on load, before the walk writes an empty --json") {
  const fs::path quiz = scratch("latin1.yaml"), json = scratch("latin1.json");
  std::string text = slurp(AMP_LAB_SOURCE_DIR "/quiz.yaml");
  const size_t at = text.find("Mixed Precision");
  REQUIRE(at != std::string::npos);
  text.replace(at, 5,
               "Mix\xe9"
               "d");
  const size_t line_start = text.rfind('\n', at) + 1;  // where the bad byte is: line and column, from 1
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  const auto column = at + 3 - line_start + 1;
  std::ofstream(quiz) << text;
  fs::remove(json);
  const auto r =
      run("quiz --reveal --quick --device cpu --quiz " + quiz.string() + " --json " + json.string());
  CHECK(r.code == 2);
  CHECK(has(r.err, ":" + std::to_string(line) + ":" + std::to_string(column) +
                       ": encoding: byte '\\xe9' is not UTF-8"));
  CHECK_FALSE(fs::exists(json));
  fs::remove(quiz);
}

TEST_CASE("a FIFO as --quiz is refused with exit 2 instead of waiting for a writer") {
  const fs::path fifo = scratch("quiz_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  REQUIRE(sh("mkfifo " + fifo.string()) == 0);
  const auto r = run("list --quiz " + fifo.string());
  CHECK(r.code == 2);
  CHECK(has(r.err, "not a regular file"));
  fs::remove(fifo);
}

TEST_CASE("output that cannot be written is an error: stdout on a full disk or closed, --json unwritable") {
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/");
  const fs::path err = scratch("write_err_" + std::to_string(::getpid()));
  CHECK(sh(bin + "amp-lab list > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "amp-lab list: cannot write to standard output: No space left on device"));
  // Output past stdout's buffer: an earlier write fails, and the cause is still named.
  REQUIRE(sh(bin + "amp-lab glossary | wc -c | awk '$1 > 8192 { exit 0 } { exit 1 }'") == 0);
  CHECK(sh(bin + "amp-lab glossary > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "amp-lab glossary: cannot write to standard output: No space left on device"));
  CHECK(sh(bin + "lab03_number_formats --quick > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "lab03_number_formats: cannot write to standard output"));
  CHECK(sh(bin + "amp-lab list >&- 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "standard output is closed"));
  CHECK(sh(bin + "amp-lab quiz --reveal --quick --device cpu --only 3 --json /dev/full > /dev/null 2> " +
           err.string()) == 3);
  CHECK(has(slurp(err), "--json: writing '/dev/full' failed: No space left on device"));
  // An unwritable path is found before any lab runs.
  const auto r = run(kTwo + " --answers cd --json /nonexistent/dir/walk.json");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--json: cannot write '/nonexistent/dir/walk.json': No such file or directory"));
  CHECK_FALSE(has(r.out, "━━"));
  fs::remove(err);
}

TEST_CASE("TERM=dumb gets no colour even on a terminal") {
  const fs::path out = scratch("term_" + std::to_string(::getpid()));
  const std::string cmd = q(AMP_LAB_BINARY_DIR "/bin/lab03_number_formats") + " --quick";
  // script(1) gives the lab a pseudo-terminal, where it would use colour.
  REQUIRE(sh("TERM=xterm script -qec " + q(cmd) + " /dev/null > " + q(out.string())) == 0);
  CHECK(has(slurp(out), "\x1b["));  // colour on a terminal: the test can tell
  REQUIRE(sh("TERM=dumb script -qec " + q(cmd) + " /dev/null > " + q(out.string())) == 0);
  CHECK_FALSE(has(slurp(out), "\x1b["));
  fs::remove(out);
}

TEST_CASE("asking for CUDA where there is none is refused up front, by the runner and by a lab") {
  const auto quiz = run("quiz --device cuda");
  const auto lab = run("--device cuda --quick", "", "lab03_number_formats");
  if (has(quiz.err, "no CUDA device")) {  // this machine has no GPU
    CHECK(quiz.code == 2);
    CHECK(lab.code == 2);
    CHECK(has(lab.err, "no CUDA device"));
  } else {  // with a GPU, the lab runs there
    CHECK(lab.code == 0);
    CHECK(has(lab.out, "device cuda"));
  }
}

// Starts the quiz in the background on a FIFO that never delivers a line, waits until `ready` shows in
// its output, sends `signals` (e.g. "INT" or "INT INT INT"), and returns what it printed and its status
// as bash reports it (128+N for a process killed by signal N, too: the summary tells them apart).
Result signalled(const std::string& args, const std::string& ready, const std::string& signals) {
  const fs::path dir = scratch("signal_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string d = dir.string();
  std::ofstream(dir / "run.sh") << "cd '" << d << "'\nmkfifo in\nexec 3<>in\n"
                                << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " << args
                                << " <in >out 2>err &\n"
                                << "pid=$!\nfor i in $(seq 600); do grep -qs '" << ready
                                << "' out && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done\n"
                                << "for s in " << signals << "; do kill -$s $pid; sleep 0.05; done\n"
                                << "wait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + (dir / "run.sh").string() + "'").c_str()) == 0);
  Result r{std::stoi(slurp(dir / "code")), slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

TEST_CASE("Ctrl-C at the prompt ends the quiz with the summary and exit code 130") {
  const auto r = signalled("quiz --quick --device cpu --only 3", "Your answer", "INT");
  CHECK(has(r.out, "Stopped (interrupted)."));
  CHECK(has(r.out, "Summary"));
  CHECK(r.code == 130);
}

TEST_CASE("SIGTERM and SIGHUP end the quiz like Ctrl-C: summary, then 128 + the signal") {
  const auto term = signalled("quiz --quick --device cpu --only 3", "Your answer", "TERM");
  CHECK(has(term.out, "Stopped (terminated)."));
  CHECK(has(term.out, "Summary"));
  CHECK(term.code == 143);
  const auto hup = signalled("quiz --quick --device cpu --only 3", "Your answer", "HUP");
  CHECK(has(hup.out, "Stopped (hang-up)."));
  CHECK(hup.code == 129);
}

namespace {

// amp-lab on a pseudo-terminal, as a person runs it: stdin is a tty, so the walk pauses between labs.
class Terminal {
 public:
  // `env`: "NAME=value" words exported first.
  explicit Terminal(const std::string& args, const std::string& env = "") {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::setenv("NO_COLOR", "1", 1);
      const std::string cmd =
          (env.empty() ? "" : "export " + env + "; ") + "exec '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " + args;
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  // Reads until `text` appears in the output after `from` (or the program ends, or 120 s pass).
  bool expect(const std::string& text) {
    for (int waited = 0; waited < 120000; waited += 100) {
      if (screen_.find(text, from_) != std::string::npos) {
        from_ = screen_.find(text, from_) + text.size();
        return true;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char buf[4096];
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n <= 0) return false;
        screen_.append(buf, static_cast<size_t>(n));
      }
    }
    return false;
  }
  void type(const std::string& keys) {
    REQUIRE(::write(fd_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
  }
  int wait_exit() {
    while (expect("\x01never\x01")) {
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& screen() const { return screen_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string screen_;
  size_t from_ = 0;
};

}  // namespace

TEST_CASE("at a terminal the walk pauses after each explanation: Enter goes on to the next lab") {
  Terminal t("quiz --quick --device cpu --file-order --only 3,8");
  REQUIRE(t.expect("Your answer"));
  t.type("c\n");
  REQUIRE(t.expect("Why: "));
  REQUIRE(t.expect("Enter next question · "));
  CHECK(t.screen().find("Q8.") == std::string::npos);  // the next lab waits for Enter
  t.type("\n");
  REQUIRE(t.expect("Q8."));
  REQUIRE(t.expect("Your answer"));
  t.type("d\n");
  REQUIRE(t.expect("Enter summary · "));  // the last answer screen waits too, before the summary
  CHECK(t.screen().find("Score:") == std::string::npos);
  t.type("\n");
  REQUIRE(t.expect("Score: 2/2 right"));
  CHECK(t.wait_exit() == 0);
}

TEST_CASE("at a terminal, q at the pause ends the walk with its summary") {
  Terminal t("quiz --quick --device cpu --file-order --only 3,8");
  REQUIRE(t.expect("Your answer"));
  t.type("c\n");
  REQUIRE(t.expect("Enter next question · "));
  t.type("q\n");
  REQUIRE(t.expect("Stopped (quit)."));
  REQUIRE(t.expect("Score: 1/2 right"));
  t.wait_exit();
  CHECK(t.screen().find("Q8.") == std::string::npos);
}

namespace {

// A fresh folder under the temporary directory, removed with its contents at the end.
struct Folder {
  fs::path path;
  explicit Folder(const std::string& stem) {
    std::string tmpl = (fs::temp_directory_path() / (stem + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    return names;
  }
};

// A folder on its own 8 KB tmpfs: a disk that is full once a checkpoint is written to it. Mounting needs
// CAP_SYS_ADMIN (root here); why_not says why there is none.
struct FullDisk {
  Folder folder{"amp_lab_cli_tmpfs"};
  bool mounted = false;
  std::string why_not;
  FullDisk() {
    if (::mount("tmpfs", folder.path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=8k") == 0)
      mounted = true;
    else
      why_not = std::string("cannot mount a tmpfs here (") + std::strerror(errno) + ")";
  }
  ~FullDisk() {
    if (mounted) ::umount2(folder.path.c_str(), MNT_DETACH);
  }
};

// Runs lab 06 in quick mode through bash with `prefix` before it (environment, ulimit), stdout discarded.
Result lab06(const std::string& prefix) {
  const fs::path err = scratch("lab06_" + std::to_string(::getpid()) + ".err");
  const int code =
      sh(prefix + " NO_COLOR=1 exec \"" AMP_LAB_BINARY_DIR "/bin/lab06_amp_api\" --quick > /dev/null 2> " +
         err.string());
  Result r{code, "", slurp(err)};
  fs::remove(err);
  return r;
}

}  // namespace

TEST_CASE("a full disk under lab 06's checkpoint ends the lab with exit 3 and one line naming the cause") {
  FullDisk full;
  if (!full.mounted) {
    std::cout << "SKIPPED: " << full.why_not << "; the file-size-limit test covers the same path\n";
    return;
  }
  const auto r = lab06("TMPDIR=" + full.folder.path.string());
  CHECK(r.code == 3);
  CHECK(count(r.err, "\n") == 1);
  CHECK(has(r.err, "lab06_amp_api: lab failed: amp::checkpoint: cannot write " + full.folder.path.string() + "/"));
  CHECK(has(r.err, ": No space left on device\n"));
  CHECK_FALSE(has(r.err, "frame #"));
  CHECK(full.folder.entries().empty());  // no checkpoint, no temporary file, no scratch folder
}

TEST_CASE("a file-size limit under lab 06's checkpoint also ends it with exit 3 and one line") {
  // ulimit -f needs no privilege. SIGXFSZ keeps its default action here (killing the lab, exit 153, its
  // scratch folder left behind, until the lab ignored it while it writes): the write fails with EFBIG.
  Folder tmp("amp_lab_cli_fsize");
  const auto r = lab06("ulimit -f 16; TMPDIR=" + tmp.path.string());
  CHECK(r.code == 3);
  CHECK(count(r.err, "\n") == 1);
  CHECK(has(r.err, "lab06_amp_api: lab failed: amp::checkpoint: cannot write " + tmp.path.string() + "/"));
  CHECK(has(r.err, ": File too large\n"));
  CHECK(tmp.entries().empty());
}

namespace {

// Runs `command` (a lab or amp-lab with its arguments) under bash with TMPDIR=`tmp`, so its pid is the
// shell's: `plant` may use $$ to put something at a name derived from it first. With `signal` set ("TERM",
// or several: "INT INT INT"), waits until the lab's scratch folder shows in `tmp`, records its mode, and
// sends the signals 50 ms apart. At most 120 s.
struct Watched {
  int code = -1;
  std::string out, err, seen_mode;  // seen_mode: the scratch folder's permission bits while the lab ran
};
Watched watch(const fs::path& tmp, const std::string& command, const std::string& plant = "",
              const std::string& signal = "") {
  Folder work("amp_lab_cli_watch");
  const std::string w = work.path.string(), t = tmp.string();
  std::ofstream(work.path / "lab.sh") << plant << "\necho $$ > '" << w << "/pid'\nNO_COLOR=1 exec " << command
                                      << " > '" << w << "/out' 2> '" << w << "/err'\n";
  std::ofstream run_sh(work.path / "run.sh");
  // set -m: without job control bash starts background commands with SIGINT ignored, which the lab inherits.
  run_sh << "set -m\nexport TMPDIR='" << t << "'\ntimeout -s KILL 120 bash '" << w << "/lab.sh' &\npid=$!\n";
  if (!signal.empty())
    run_sh << "until [ -s '" << w << "/pid' ]; do sleep 0.01; done\nlab=$(cat '" << w << "/pid')\n"
           << "while kill -0 $lab 2>/dev/null; do\n"
           << "  d=$(find '" << t << "' -mindepth 1 -maxdepth 1 -type d -name 'amp_lab_06_*' | head -1)\n"
           << "  if [ -n \"$d\" ]; then stat -c %a \"$d\" > '" << w << "/mode'\n"
           << "    for s in " << signal << "; do kill -$s $lab; sleep 0.05; done; break; fi\n"
           << "  sleep 0.005\ndone\n";
  run_sh << "wait $pid\necho $? > '" << w << "/code'\n";
  run_sh.close();
  // bash's job-control notes ("Terminated ...") go to a file, not the test's output.
  REQUIRE(std::system(("bash '" + w + "/run.sh' 2> '" + w + "/jobs'").c_str()) == 0);
  Watched r{std::stoi(slurp(work.path / "code")), slurp(work.path / "out"), slurp(work.path / "err"),
            slurp(work.path / "mode")};
  while (!r.seen_mode.empty() && r.seen_mode.back() == '\n') r.seen_mode.pop_back();
  return r;
}

const std::string kLab06 = "\"" AMP_LAB_BINARY_DIR "/bin/lab06_amp_api\"";

}  // namespace

TEST_CASE(
    "lab 06 leaves a symlink planted at its old predictable scratch name, and the file it points to, "
    "untouched") {
  Folder tmp("amp_lab_cli_symlink"), elsewhere("amp_lab_cli_victim");
  const fs::path victim = elsewhere.path / "precious.txt";
  std::ofstream(victim) << "precious";
  // The name lab 06 used before: amp_lab_06_<pid>.pt in TMPDIR; exec keeps the shell's pid for the lab.
  const auto r =
      watch(tmp.path, kLab06 + " --quick", "ln -s '" + victim.string() + "' \"$TMPDIR/amp_lab_06_$$.pt\"");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(slurp(victim) == "precious");
  const auto entries = tmp.entries();
  REQUIRE(entries.size() == 1);  // the planted link only: no scratch folder left
  const fs::path link = tmp.path / entries.front();
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(fs::read_symlink(link) == victim);
}

TEST_CASE("lab 06 neither opens nor replaces a FIFO planted at its old predictable scratch name") {
  Folder tmp("amp_lab_cli_fifo");
  const auto r = watch(tmp.path, kLab06 + " --quick", "mkfifo \"$TMPDIR/amp_lab_06_$$.pt\"");
  CHECK(r.code == 0);  // 137 would be the 120 s deadline: the lab hung on the FIFO
  CHECK(r.err.empty());
  const auto entries = tmp.entries();
  REQUIRE(entries.size() == 1);
  CHECK(fs::is_fifo(fs::symlink_status(tmp.path / entries.front())));
}

TEST_CASE("lab 06 leaves nothing in TMPDIR after a run, and an empty TMPDIR means /tmp") {
  Folder tmp("amp_lab_cli_clean");
  const auto r = watch(tmp.path, kLab06 + " --quick");
  CHECK(r.code == 0);
  CHECK(tmp.entries().empty());
  const auto empty = lab06("TMPDIR=");
  CHECK(empty.code == 0);
  CHECK(empty.err.empty());
}

TEST_CASE(
    "lab 06 killed by SIGTERM, SIGINT or SIGHUP mid-run removes its private scratch folder and dies by the "
    "signal") {
  for (const auto& [name, number] : {std::pair<std::string, int>{"TERM", 15}, {"INT", 2}, {"HUP", 1}}) {
    CAPTURE(name);
    Folder tmp("amp_lab_cli_signal");
    const auto r = watch(tmp.path, kLab06, "", name);  // default size: long enough to be caught mid-run
    REQUIRE(r.seen_mode == "700");  // the signal came while the scratch folder existed; only we can enter it
    CHECK(r.code == 128 + number);  // ended by the signal itself, as without a handler
    CHECK(tmp.entries().empty());
  }
}

TEST_CASE(
    "under amp-lab, SIGTERM during lab 06 ends the walk with its summary and leaves no scratch folder") {
  Folder tmp("amp_lab_cli_walk");
  const auto r = watch(
      tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "", "TERM");
  REQUIRE(r.seen_mode == "700");
  CHECK(has(r.out, "Stopped (terminated)."));
  CHECK(has(r.out, "Summary"));
  CHECK(r.code == 143);
  CHECK(tmp.entries().empty());
}

TEST_CASE(
    "under amp-lab, a second Ctrl-C during lab 06 stops it now, with the summary, and leaves no scratch "
    "folder") {
  Folder tmp("amp_lab_cli_walk2");
  const auto r =
      watch(tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "",
            "INT INT");
  REQUIRE(r.seen_mode == "700");
  CHECK(has(r.err, "stopping after this lab (Ctrl-C again to stop now)"));
  CHECK(has(r.out, "Stopped (interrupted)."));
  CHECK(has(r.out, "interrupted"));
  CHECK_FALSE(has(r.out, "The lab failed"));
  CHECK(r.code == 130);
  CHECK(tmp.entries().empty());
}

// ---- The runner runs each lab's own executable ------------------------------------------------------

namespace {

// A folder standing in for build/bin's labs ($AMP_LAB_LAB_DIR): every lab executable linked in, so that a
// test can replace one by a script that crashes, hangs or prints no report.
struct FakeLabs {
  Folder folder{"amp_lab_cli_labs"};
  FakeLabs() {
    for (const auto& decl : lab::catalog())
      fs::create_symlink(AMP_LAB_BINARY_DIR "/bin/" + decl.executable(), folder.path / decl.executable());
  }
  // `body` is a sh script; "$@" holds the runner's arguments (--json and the walk's flags).
  void replace(const std::string& exe, const std::string& body) {
    fs::remove(folder.path / exe);
    std::ofstream(folder.path / exe) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(folder.path / exe, fs::perms::owner_all);
  }
  std::string real(const std::string& exe) const { return AMP_LAB_BINARY_DIR "/bin/" + exe; }
  std::string env() const { return "AMP_LAB_LAB_DIR=" + folder.path.string(); }
};

test_support::ProcessResult quiz_with(const std::vector<std::string>& env,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv{AMP_LAB_BINARY_DIR "/bin/amp-lab", "quiz", "--no-color"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test_support::run_process(argv, /*timeout_s=*/300, env);
}

// Every process running `exe` now (by /proc/PID/exe), other developers' builds aside.
std::vector<int> processes_of(const std::string& exe) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto target = fs::read_symlink(e.path() / "exe", ec);
    if (!ec && target == exe) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace

TEST_CASE(
    "a lab that crashes, prints no report or is not built costs the walk one line, and the walk goes on") {
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {"kill -SEGV $$",
       "The lab failed: lab 03 number-formats crashed: killed by signal 11 (Segmentation fault)"},
      {"echo 'not a report'", "The lab failed: it printed no readable report"},
      {"echo 'lab03_number_formats: lab failed: out of cheese' >&2; exit 3",
       "The lab failed: out of cheese\n"},
      {"", "The lab failed: lab 03 number-formats is not built here"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.body);
    FakeLabs labs;
    if (c.body.empty())
      fs::remove(labs.folder.path / "lab03_number_formats");
    else
      labs.replace("lab03_number_formats", c.body);
    const auto r = quiz_with(
        {labs.env()}, {"--quick", "--device", "cpu", "--only", "3,8", "--file-order", "--answers", "cd"});
    CHECK(r.code == 3);                              // a lab failed to run
    CHECK(has(squeeze(r.out), squeeze(c.message)));  // wrapped at the width
    CHECK(count(r.out, "The lab failed") == 1);
    CHECK(has(r.out, "Q3. "));           // its question is still asked, without its numbers
    CHECK(has(r.out, "Q8. "));           // and the walk goes on
    CHECK(has(r.out, "verdict: PASS"));  // lab 08's report
    CHECK(has(squeeze(r.out),
              "Lab checks: did NOT all hold: 1 of 1 lab that reported passed; 1 lab failed to run"));
    CHECK(inert(r.out));
  }
}

TEST_CASE(
    "the walk waits for a lab still being built, and a lab whose build failed is a failed lab pointing to "
    "the log") {
  FakeLabs labs;
  fs::remove(labs.folder.path / "lab03_number_formats");  // "built" only when its .ok appears
  Folder status("amp_lab_cli_status");
  const std::string d = status.path.string();
  std::ofstream(status.path / "log") << "/path/to/build-ahead.log\n";
  std::ofstream(status.path / "lab08_autocast_policy.failed") << "/path/to/build-ahead.log\n";
  // A stand-in builder: alive until killed; lab 03's build "ends" after 1.5 s.
  const int code = sh("sleep 60 & echo $! > " + d + "/builder.pid; (sleep 1.5; ln -s " +
                      q(labs.real("lab03_number_formats")) + " " + labs.folder.path.string() +
                      "/lab03_number_formats; touch " + d + "/lab03_number_formats.ok) & " +
                      "NO_COLOR=1 AMP_LAB_BUILD_AHEAD=" + d + " " + labs.env() + " " +
                      q(AMP_LAB_BINARY_DIR "/bin/amp-lab") +
                      " quiz --quick --device cpu --only 3,8 --file-order --answers cd > " + d +
                      "/out 2>&1; " + "rc=$?; kill $(cat " + d + "/builder.pid); exit $rc");
  const std::string out = slurp(status.path / "out");
  CHECK(code == 3);
  CHECK(has(out, "70000"));  // lab 03 ran once built
  CHECK(has(squeeze(out),
            "The lab failed: lab 08 autocast-policy did not build (see /path/to/build-ahead.log)"));
  CHECK(has(out, "Q8. "));
  CHECK_FALSE(has(out, "building lab"));  // no live line into a file
}

TEST_CASE(
    "on a terminal a slow lab shows a live line that is erased before its report, and a pipe never sees it") {
  FakeLabs labs;
  labs.replace("lab03_number_formats", "sleep 1.5; exec " + q(labs.real("lab03_number_formats")) + " \"$@\"");
  Terminal t("quiz --quick --device cpu --only 3 --file-order --answers c", labs.env());
  REQUIRE(t.expect("running lab 03 number-formats... "));
  REQUIRE(t.expect("Score: 1/1 right"));
  t.wait_exit();
  const std::string& screen = t.screen();
  const size_t live = screen.find("running lab 03 number-formats... ");
  const size_t erased = screen.find("\r          ", live);  // spaces over it, from the line's start
  CHECK(erased != std::string::npos);
  CHECK(erased < screen.find("== bf16 and fp16"));  // before the report
  const auto piped = quiz_with(
      {labs.env()}, {"--quick", "--device", "cpu", "--only", "3", "--file-order", "--answers", "c"});
  CHECK(piped.code == 0);
  CHECK_FALSE(has(piped.out, "running lab"));
  CHECK_FALSE(has(piped.out, "\r"));
}

// ---- Ctrl-C ------------------------------------------------------------------------------------------

namespace {

// The quiz with stdin on a FIFO that never delivers a line and the labs of `labs`; once `ready` shows in
// its output and the fake lab has started, sends each of `signals` 300 ms apart. After the first, records
// whether the fake lab (which wrote its pid to labpid) was still running when "stopping after this lab"
// showed on stderr.
struct Stopped {
  Result r;
  bool lab_alive_at_message = false;
  bool lab_left = false;  // the fake lab's process was still there after the walk ended
};
Stopped stop_walk(const FakeLabs& labs, const std::string& args, const std::string& ready,
                  const std::string& signals) {
  Folder dir("amp_lab_cli_stop");
  const std::string d = dir.path.string();
  std::ofstream(dir.path / "run.sh")
      << "cd '" << d << "'\nmkfifo in\nexec 3<>in\nexport " << labs.env() << " LABPID='" << d << "/labpid'\n"
      << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " << args << " <in >out 2>err &\n"
      << "pid=$!\nfor i in $(seq 600); do grep -qs '" << ready
      << "' out && break; sleep 0.05; done\n"
      // The fake lab has started (a signal before it starts stops the walk at once, with no lab to wait for).
      << "for i in $(seq 600); do [ -s labpid ] && break; sleep 0.05; done\n"
      << "first=1\nfor s in " << signals << "; do kill -$s $pid\n"
      << "  if [ $first = 1 ]; then for i in $(seq 40); do grep -q 'stopping after this lab' err && break; "
         "sleep 0.025; done\n"
      << "    kill -0 $(cat labpid) 2>/dev/null && echo yes > alive; first=0; fi\n"
      << "  sleep 0.3; done\nwait $pid\necho $? > code\n"
      // A zombie (killed, not yet reaped by init) is not left running.
      << "sleep 0.2; grep -qs '^State:[[:space:]]*[RSDTtWPIK]' /proc/$(cat labpid)/status && echo yes > "
         "left\ntrue\n";
  REQUIRE(std::system(("bash '" + d + "/run.sh'").c_str()) == 0);
  return {Result{std::stoi(slurp(dir.path / "code")), slurp(dir.path / "out"), slurp(dir.path / "err")},
          fs::exists(dir.path / "alive"), fs::exists(dir.path / "left")};
}

}  // namespace

TEST_CASE(
    "the first Ctrl-C during a lab says at once that the walk stops after it, and the lab ends its run "
    "before the summary") {
  FakeLabs labs;
  labs.replace("lab03_number_formats",
               "echo $$ > \"$LABPID\"; sleep 2; exec " + q(labs.real("lab03_number_formats")) + " \"$@\"");
  const auto s = stop_walk(labs, "quiz --quick --device cpu --only 3", "1/1 · lab", "INT");
  CHECK(has(s.r.err, "stopping after this lab (Ctrl-C again to stop now)\n"));
  CHECK(s.lab_alive_at_message);  // said while the lab still ran, not after it
  CHECK(has(s.r.out, "Stopped (interrupted)."));
  const auto checks = nlohmann::json::parse(run("run number-formats --quick --json").out)["checks"].size();
  CHECK(has(s.r.out,
            std::to_string(checks) + "/" + std::to_string(checks) + " pass"));  // the lab finished its run
  CHECK_FALSE(has(s.r.out, "Your answer"));
  CHECK(s.r.code == 130);
}

TEST_CASE(
    "a second Ctrl-C stops the running lab now: reported as interrupted, not failed, and nothing is left "
    "running") {
  FakeLabs labs;
  // A lab that would run for a minute, with a child in its process group.
  labs.replace("lab03_number_formats", "sleep 60 & echo $! > \"$LABPID\"; wait");
  const auto s = stop_walk(labs, "quiz --quick --device cpu --only 3,8", "1/2 · lab", "INT INT");
  CHECK(has(s.r.err, "stopping after this lab (Ctrl-C again to stop now)"));
  CHECK(has(s.r.out, "Interrupted: lab 03 number-formats was stopped (interrupted)"));
  CHECK(has(s.r.out, "Stopped (interrupted)."));
  CHECK(has(s.r.out, "interrupted"));
  CHECK_FALSE(has(s.r.out, "The lab failed"));
  CHECK_FALSE(has(s.r.out, "Q8."));
  CHECK(has(s.r.out, "Lab checks: no lab ran to the end"));
  CHECK(s.r.code == 130);
  CHECK_FALSE(s.lab_left);  // the lab's child went with it
}

TEST_CASE("Ctrl-C twice during lab 13 stops it and leaves none of its rank processes behind") {
  const std::string exe = AMP_LAB_BINARY_DIR "/bin/lab13_data_parallel";
  REQUIRE(processes_of(exe).empty());  // none of this build's lab 13 is running before
  Folder dir("amp_lab_cli_ranks");
  const std::string d = dir.path.string();
  std::ofstream(dir.path / "run.sh")
      << "cd '" << d << "'\nmkfifo in\nexec 3<>in\n"
      << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR
         "/bin/amp-lab' quiz --track all --device cpu --only 13 <in >out 2>err &\n"
      << "pid=$!\n"
      // Once the lab and at least one rank run (three processes of lab 13's executable), Ctrl-C twice.
      << "for i in $(seq 600); do n=0; for p in /proc/[0-9]*; do [ \"$(readlink $p/exe)\" = '" << exe
      << "' ] && n=$((n+1)); done; [ $n -ge 3 ] && break; sleep 0.05; done\necho $n > ranks\n"
      << "kill -INT $pid; sleep 0.3; kill -INT $pid\nwait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + d + "/run.sh'").c_str()) == 0);
  CHECK(std::stoi(slurp(dir.path / "ranks")) >= 3);  // caught while its ranks ran
  CHECK(std::stoi(slurp(dir.path / "code")) == 130);
  const std::string out = slurp(dir.path / "out");
  CHECK(has(out, "Stopped (interrupted)."));
  CHECK_FALSE(has(out, "The lab failed"));
  CHECK(processes_of(exe).empty());
}

TEST_CASE("a signal right after amp-lab quiz starts still ends with the summary and the --json file") {
  Folder dir("amp_lab_cli_early");
  const std::string d = dir.path.string(), bin = AMP_LAB_BINARY_DIR "/bin/amp-lab";
  // As soon as the process is amp-lab (exec done), 50 ms later: SIGTERM.
  std::ofstream(dir.path / "run.sh") << "cd '" << d << "'\n'" << bin
                                     << "' quiz --quick --device cpu --only 3,8 "
                                     << "--json walk.json </dev/null >out 2>err &\npid=$!\n"
                                     << "until [ \"$(readlink /proc/$pid/exe)\" = '" << bin
                                     << "' ]; do :; done\n"
                                     << "sleep 0.05; kill -TERM $pid\nwait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + d + "/run.sh'").c_str()) == 0);
  CHECK(std::stoi(slurp(dir.path / "code")) == 143);
  CHECK(has(slurp(dir.path / "out"), "Summary"));
  REQUIRE(fs::exists(dir.path / "walk.json"));
  const auto j = nlohmann::json::parse(slurp(dir.path / "walk.json"));
  CHECK(j["completed"] == false);
}

// ---- The --json file ---------------------------------------------------------------------------------

TEST_CASE(
    "two walks writing the same --json file at once leave one whole run's output, and no temporary file") {
  for (int attempt = 0; attempt < 2; ++attempt) {
    CAPTURE(attempt);
    Folder dir("amp_lab_cli_json2");
    const std::string f = (dir.path / "walk.json").string(), bin = AMP_LAB_BINARY_DIR "/bin/amp-lab";
    // Waited for by process id: `wait %2` fails with "no such job" (127) when that walk ended first.
    const int code =
        sh("'" + bin + "' quiz --quick --device cpu --only 3,8 --file-order --answers cd --json " + f +
           " >/dev/null 2>&1 & a=$!; '" + bin +
           "' quiz --quick --device cpu --only 6 --file-order --answers a --json " + f +
           " >/dev/null 2>&1 & b=$!; wait $a && wait $b");
    CHECK(code == 0);
    const auto j = nlohmann::json::parse(slurp(f));  // throws (fails the test) on a mix of the two
    std::vector<int> numbers;
    for (const auto& q : j["questions"]) numbers.push_back(q["number"].get<int>());
    CHECK((numbers == std::vector<int>{3, 8} || numbers == std::vector<int>{6}));
    CHECK(j["completed"] == true);
    CHECK(dir.entries() == std::vector<std::string>{"walk.json"});
  }
}

TEST_CASE("--json naming a file the walk reads is refused before any lab runs, however the path is spelt") {
  Folder dir("amp_lab_cli_same");
  const fs::path quiz = dir.path / "q.yaml";
  const std::string text = slurp(AMP_LAB_SOURCE_DIR "/quiz.yaml");
  std::ofstream(quiz) << text;
  fs::create_symlink(quiz, dir.path / "link.json");
  fs::create_hard_link(quiz, dir.path / "hard.json");
  const std::string d = dir.path.string(), bin = "'" AMP_LAB_BINARY_DIR "/bin/amp-lab'";
  const std::string walk = " quiz --quick --device cpu --only 3 --file-order --answers c";
  const std::string cases[] = {
      bin + walk + " --quiz q.yaml --json q.yaml",
      bin + walk + " --quiz q.yaml --json ./q.yaml",
      bin + walk + " --quiz q.yaml --json " + d + "/../" + dir.path.filename().string() + "/q.yaml",
      bin + walk + " --quiz q.yaml --json link.json",
      bin + walk + " --quiz q.yaml --json hard.json",
      "AMP_LAB_QUIZ=" + d + "/q.yaml " + bin + walk + " --json ./q.yaml",  // the default quiz file
  };
  for (const auto& c : cases) {
    CAPTURE(c);
    const int code = sh("cd " + d + " && " + c + " > out.txt 2> err.txt");
    const std::string err = slurp(dir.path / "err.txt"), out = slurp(dir.path / "out.txt");
    CHECK(code == 2);
    CHECK(has(err, "which amp-lab reads; write the JSON elsewhere"));
    CHECK(count(err, "\n") == 1);
    CHECK_FALSE(has(out, "━━"));  // refused before the first lab
    CHECK(slurp(quiz) == text);
    fs::remove(dir.path / "out.txt"), fs::remove(dir.path / "err.txt");
    CHECK(dir.entries().size() == 3);  // q.yaml, link.json, hard.json: no temporary file
  }
}

TEST_CASE(
    "--json '' and --json naming the saved progress or its lock are refused up front, there yet or not") {
  Folder dir("amp_lab_cli_json_progress");
  const fs::path state = dir.path / "state" / "amp-lab";
  fs::create_directories(state);  // the folder is there; the files come in the second round
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/amp-lab");
  for (const bool there : {false, true}) {
    if (there)
      std::ofstream(state / "progress.json") << R"({"version": 1, "quiz": {}, "kept": true})"
                                             << "\n";
    if (there) std::ofstream(state / "progress.json.lock");
    const std::string before = there ? slurp(state / "progress.json") : "";
    for (const std::string& target : {std::string("''"), q((state / "progress.json").string()),
                                      q((state / "progress.json.lock").string()),
                                      q((state / ".." / "amp-lab" / "progress.json").string())}) {
      for (const char* answers :
           {" --file-order --answers c", ""}) {  // a walk that saves answers and one that does not
        CAPTURE(there);
        CAPTURE(target);
        CAPTURE(answers);
        const int code =
            sh("cd " + q(dir.path.string()) + " && XDG_STATE_HOME=" + q((dir.path / "state").string()) +
               " NO_COLOR=1 " + bin + " quiz --quick --device cpu --only 3" + answers + " --json " + target +
               " < /dev/null > out.txt 2> err.txt");
        const std::string err = slurp(dir.path / "err.txt");
        CHECK(code == 2);
        CHECK(count(err, "\n") == 1);
        CHECK((has(err, "--json needs a file name, got ''") || has(err, "which amp-lab reads")));
        CHECK_FALSE(has(slurp(dir.path / "out.txt"), "━━"));  // before the first lab
        CHECK(fs::exists(state / "progress.json") == there);
        if (there) CHECK(slurp(state / "progress.json") == before);
      }
    }
  }
}

TEST_CASE("exercise and check: a folder at the learner's path, --dir kept in suggestions, paths escaped") {
  Folder dir("amp_lab_cli_exercise");
  const std::string ws = (dir.path / "ws").string();
  const auto started = run("exercise 09 --dir " + q(ws));
  REQUIRE(started.code == 0);
  CHECK(has(started.out, "amp-lab check 09 --dir " + ws + " "));
  const size_t at = started.out.find("your file: ");
  REQUIRE(at != std::string::npos);
  const fs::path file = started.out.substr(at + 11, started.out.find('\n', at) - at - 11);
  REQUIRE(fs::is_regular_file(file));
  // A folder where the learner's file goes: both commands say so, neither sends the learner to the other.
  fs::remove(file);
  fs::create_directory(file);
  for (const std::string command : {"exercise", "check"}) {
    CAPTURE(command);
    const auto r = run(command + " 09 --dir " + q(ws));
    CHECK(r.code == 2);
    CHECK(r.err ==
          "amp-lab " + command + ": " + file.string() +
              " is a directory, not your exercise file: move it away, or use --dir another folder\n");
  }
  // No file yet in another workspace: the command suggested names that workspace.
  const std::string empty = (dir.path / "empty ws").string();
  fs::create_directories(empty);
  const auto none = run("check 09 --dir " + q(empty));
  CHECK(none.code == 2);
  CHECK(has(none.err, "yet: start with amp-lab exercise 09 --dir '" + empty + "'\n"));
  // A folder name with ESC in it is printed escaped.
  const auto esc = run("exercise 09 --dir " + q((dir.path / "e\x1b[31m").string()));
  CHECK(esc.code == 0);
  CHECK(inert(esc.out));
  CHECK(has(esc.out, "e\\x1b[31m/"));
  // A workspace that cannot be written: the cause, and exit 2 (the exercises' codes are 0, 1 and 2).
  const auto unwritable = run("exercise 09 --dir /proc/self");
  CHECK(unwritable.code == 2);
  CHECK(has(unwritable.err, "amp-lab exercise: cannot write /proc/self/"));
  CHECK(count(unwritable.err, ": ") == 2);  // "amp-lab exercise: cannot write FILE: <strerror>"
  CHECK(count(unwritable.err, "\n") == 1);
  // An empty --dir, and one that is a symlink to nothing: said as they are, not as a system error.
  const auto blank = run("exercise 09 --dir ''");
  CHECK(blank.code == 2);
  CHECK(blank.err == "amp-lab exercise: --dir needs a folder, got ''\n");
  fs::create_symlink(dir.path / "nowhere", dir.path / "dangling");
  const auto dangling = run("exercise 09 --dir " + q((dir.path / "dangling").string()));
  CHECK(dangling.code == 2);
  CHECK(has(dangling.err, "dangling is a symlink to nothing"));
  CHECK_FALSE(fs::exists(dir.path / "nowhere"));
}

// ---- Output that cannot be written, echoed input -----------------------------------------------------

TEST_CASE(
    "help and version to a full disk or a closed stdout fail with one line, and a lab's write error shows "
    "once") {
  const std::string bin = q(AMP_LAB_BINARY_DIR "/bin/");
  const fs::path err = scratch("help_err");
  const std::string commands[] = {"amp-lab --version",    "amp-lab --help",
                                  "amp-lab help",         "amp-lab run --help",
                                  "amp-lab run 3 --help", "lab03_number_formats --help",
                                  "amp-lab quiz --help",  "amp-lab info --help"};
  for (const auto& c : commands) {
    for (const char* to : {"> /dev/full", ">&-"}) {
      CAPTURE(c);
      CAPTURE(to);
      const int code = sh(bin + c + " " + to + " 2> " + err.string());
      CHECK(code == 3);
      CHECK(count(slurp(err), "\n") == 1);
      CHECK((has(slurp(err), "No space left on device") || has(slurp(err), "standard output is closed")));
    }
  }
  CHECK(sh(bin + "amp-lab run 3 --quick > /dev/full 2> " + err.string()) == 3);
  CHECK(count(slurp(err), "cannot write to standard output") == 1);
  CHECK(count(slurp(err), "\n") == 1);
  fs::remove(err);
}

TEST_CASE("every command's --help keeps every character at any width, for default quiz paths of any length") {
  const auto ink = [](const std::string& text) {  // the text without blanks: what wrapping must not change
    std::string out;
    for (char c : text)
      if (c != ' ' && c != '\n') out += c;
    return out;
  };
  const std::pair<std::string, std::string> commands[] = {
      {"amp-lab", "quiz --help"},     {"amp-lab", "list --help"},        {"amp-lab", "progress --help"},
      {"amp-lab", "glossary --help"}, {"amp-lab", "exercises --help"},   {"amp-lab", "exercise --help"},
      {"amp-lab", "check --help"},    {"amp-lab", "watch --help"},       {"amp-lab", "info --help"},
      {"amp-lab", "run 3 --help"},    {"lab03_number_formats", "--help"}};
  for (const auto& [program, args] : commands) {
    const auto wide = run(args, "", program, "COLUMNS=1000");
    CAPTURE(args);
    REQUIRE(wide.code == 0);
    for (const size_t width : {40, 57, 80, 111, 200}) {
      CAPTURE(width);
      const auto r = run(args, "", program, "COLUMNS=" + std::to_string(width));
      CHECK(ink(r.out) == ink(wide.out));
      std::istringstream lines(r.out);
      for (std::string line; std::getline(lines, line);)  // a line too wide is one word alone
        if (line.size() > width) CHECK(line.find(' ', line.find_first_not_of(' ')) == std::string::npos);
    }
  }
  // The default quiz path is the clone's: every length from 1 to 200 at the default width, 80.
  for (size_t length = 1; length <= 200; ++length) {
    const std::string path = "/" + std::string(length - 1, 'q');
    const auto r = run("quiz --help", "", "amp-lab", "AMP_LAB_QUIZ=" + path);
    if (!has(ink(r.out), "(default:" + path + ")")) {
      CAPTURE(length);
      CHECK(r.out == "the help text with (default: " + path + ")");
    }
  }
}

TEST_CASE("quiz --help quotes AMP_LAB_QUIZ: escape bytes come out inert and a 100 KB value is cut") {
  const auto r = run("quiz --help", "", "amp-lab");
  REQUIRE(r.code == 0);
  const fs::path out = scratch("help_out");
  REQUIRE(sh("AMP_LAB_QUIZ=\"$(printf \"\\033[2J\\033]0;pwned\\007\")$(head -c 100000 /dev/zero | tr "
             "\"\\\\0\" x)\" " +
             q(AMP_LAB_BINARY_DIR "/bin/amp-lab") + " quiz --help > " + out.string()) == 0);
  const std::string help = slurp(out);
  fs::remove(out);
  CHECK(inert(help));
  CHECK(has(help, "\\x1b[2J"));
  CHECK(help.size() < r.out.size() + 2000);  // cut, not 100 KB more
}

// ---- Names, help, plurals, dtypes --------------------------------------------------------------------

TEST_CASE(
    "amp-lab run takes a lab by number, zero-padded number, id, id with underscores or executable name") {
  for (const char* name :
       {"02", "2", "loss-scaling", "loss_scaling", "02_loss_scaling", "lab02_loss_scaling"}) {
    CAPTURE(name);
    const auto r = run(std::string("run ") + name + " --quick --json");
    CHECK(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["lab"] == "loss-scaling");
  }
  const auto near = run("run loss-scalin");
  CHECK(near.code == 2);
  CHECK(near.err ==
        "amp-lab run: no lab named 'loss-scalin'; did you mean loss-scaling? (see: amp-lab list)\n");
  const auto far = run("run xyzzy");
  CHECK(far.code == 2);
  CHECK(far.err == "amp-lab run: no lab named 'xyzzy' (see: amp-lab list)\n");
}

TEST_CASE("quiz --help lists every track of the quiz file it reads, with its number of questions") {
  const auto r = run("quiz --help");
  REQUIRE(r.code == 0);
  std::string flat;  // the help is wrapped
  for (char c : r.out) flat += c == '\n' ? ' ' : c;
  while (flat.find("  ") != std::string::npos) flat.replace(flat.find("  "), 2, " ");
  for (const auto& t : project_quiz().tracks) {
    const size_t n = runner::select_track(project_quiz(), t.id).questions.size();
    CAPTURE(t.id);
    CHECK(has(flat, t.id + " (" + (t.id == project_quiz().tracks.front().id ? "the default, " : "") +
                        std::to_string(n) + (n == 1 ? " question)" : " questions)")));
  }
  const fs::path two = two_track_quiz();
  const auto other = run("quiz --help --quiz " + two.string());
  CHECK(has(other.out, "other (1 question)"));
  fs::remove(two);
}

TEST_CASE(
    "each lab's header states its own 16-bit type: fp16 for the labs that always run it, and no global "
    "dtype") {
  std::string only;
  std::vector<const lab::LabDecl*> fp16_labs;
  for (int n : {1, 2, 9, 10, 11, 12}) {
    fp16_labs.push_back(lab::find_decl(std::to_string(n)));
    REQUIRE(fp16_labs.back() != nullptr);
    only += (only.empty() ? "" : ",") + std::to_string(n);
  }
  const auto r = run("quiz --track all --quick --device cpu --only " + only + " --file-order --answers " +
                     std::string(fp16_labs.size(), 's'));
  REQUIRE(r.code == 0);
  const size_t banner = r.out.find("\ndevice ");
  REQUIRE(banner != std::string::npos);
  CHECK_FALSE(has(r.out.substr(banner, r.out.find('\n', banner + 1) - banner), "dtype"));
  for (const auto* decl : fp16_labs) {
    CAPTURE(decl->id);
    // The banner names the lab's folder; the header under it its device and its own types.
    const size_t at = r.out.find(decl->folder() + "/ ━━");
    REQUIRE(at != std::string::npos);
    CHECK(r.out.find("\ndevice cpu · fp16 · seed 0", at) < r.out.find("━━", at + decl->folder().size() + 9));
  }
  const auto formats = run("quiz --quick --device cpu --only 3 --file-order --answers c");
  CHECK(has(formats.out, "labs/03_number_formats/ ━━"));
  CHECK(has(formats.out, "\ndevice cpu · fp16 and bf16 · seed 0 · quick mode · measured in "));
}

TEST_CASE(
    "--dtype is taken by the labs whose declaration says what it chooses, refused in one line by the others, "
    "and passed on by the walk only to the labs that take it") {
  const std::string takers = lab::labs_taking_dtype();
  CHECK(takers == "01, 05 and 08");  // the labs whose code reads the dtype (Context::dtype, dtype_given)
  for (const char* given : {"--dtype bf16", "--dtype=fp16"}) {
    CAPTURE(given);
    const auto refused = run(std::string("run 2 --quick ") + given);
    CHECK(refused.code == 2);
    CHECK(refused.out.empty());
    CHECK(refused.err ==
          "lab02_loss_scaling: --dtype does not apply to this lab: it runs fp16, which its question fixes "
          "(--dtype chooses the 16-bit type in labs 01, 05 and 08)\n");
  }
  const auto taken = run("run 1 --quick --json --dtype bf16");
  CHECK(taken.code == 0);
  CHECK(nlohmann::json::parse(taken.out)["dtypes"] == "bf16");
  // --help: a taker lists --dtype with what it chooses; the others name their fixed types instead.
  const auto with = run("run 1 --help"), without = run("run 14 --help");
  CHECK(has(squeeze(with.out), "--dtype arg fp16 or bf16: the 16-bit type the weights are stored in"));
  CHECK_FALSE(has(without.out, "--dtype arg"));
  CHECK(has(squeeze(without.out),
            "Types: E4M3 and E5M2, fixed by the lab's question: --dtype does not apply "
            "(labs 01, 05 and 08 take it)."));
  CHECK(has(squeeze(run("list").out), "--dtype fp16|bf16 chooses the 16-bit type of labs 01, 05 and 08"));
  // The walk's --dtype reaches lab 01 (its header says bf16) and not lab 02, which would refuse it.
  const auto walk = run("quiz --quick --device cpu --dtype bf16 --only 1,2 --answers ss");
  CHECK(walk.code == 0);
  const size_t lab01 = walk.out.find("labs/01_master_weights/ ━━"),
               lab02 = walk.out.find("labs/02_loss_scaling/ ━━");
  REQUIRE(lab01 != std::string::npos);
  REQUIRE(lab02 != std::string::npos);
  CHECK(walk.out.find("\ndevice cpu · bf16 · seed 0", lab01) < lab02);
  CHECK(walk.out.find("\ndevice cpu · fp16 · seed 0", lab02) != std::string::npos);
}

// ---- The summary -------------------------------------------------------------------------------------

TEST_CASE(
    "the summary shows no answer of a question not answered, and ends with the commands that retry and go "
    "on") {
  const auto r = run("quiz --quick --device cpu --file-order --only 3,4,8",
                     "b\ns\n");  // wrong, skipped, then end of input
  REQUIRE(has(r.out, "Stopped (end of input)."));
  const std::string summary = r.out.substr(r.out.find("Summary"));
  const auto row = [&](const std::string& start) {
    const size_t at = summary.find("\n  " + start);
    return at == std::string::npos ? std::string()
                                   : summary.substr(at + 1, summary.find('\n', at + 1) - at - 1);
  };
  CHECK(has(row("3 "), "b (wrong)"));
  CHECK(has(row("3 "), " c "));  // answered: its answer is shown
  CHECK(has(row("4 "), "skipped"));
  CHECK(count(row("4 "), " - ") == 1);  // skipped: the correct column says nothing
  // Left at its prompt (end of input there): neither an answer nor the correct option, and not "not reached".
  CHECK(has(row("8 "), "not answered"));
  CHECK(count(row("8 "), " - ") == 1);
  CHECK(has(summary, "Retry the 2 you missed or skipped: amp-lab quiz --only 3,4\n"));
  CHECK(has(summary, "Go on where you stopped: amp-lab quiz --only 8\n"));
  // The retry command asks exactly those questions.
  std::string right;
  for (int n : {3, 4})
    for (const auto& q : project_quiz().questions)
      if (q.number == n) right += static_cast<char>('a' + q.answer);
  const auto retry = run("quiz --quick --device cpu --only 3,4 --file-order --answers " + right);
  CHECK(has(retry.out, "Score: 2/2 right"));
  const fs::path two = two_track_quiz();
  const auto other =
      run("quiz --quick --device cpu --quiz " + two.string() + " --track other --file-order --answers a");
  CHECK(has(squeeze(other.out), "Retry the one you missed or skipped: amp-lab quiz --track other --quiz " +
                                    two.string() + " --only 2 "));  // wrapped at the width when long
  fs::remove(two);
}

// ---- Progress, glossary, width -----------------------------------------------------------------------

TEST_CASE(
    "typed answers are saved as the walk goes: --resume goes on, --retry asks the missed, --reset forgets") {
  const fs::path saved = state_home.path / "amp-lab" / "progress.json";
  fs::remove(saved);
  const auto first =
      run("quiz --quick --device cpu --file-order --only 3,4", "b\nh\ns\n");  // Q3 wrong; Q4 a hint, skipped
  REQUIRE(first.code == 0);
  REQUIRE(fs::exists(saved));
  const auto j = nlohmann::json::parse(slurp(saved));
  const auto& core = j["quiz"][project_quiz().tracks.front().id]["questions"];
  CHECK(core["3"]["attempts"][0]["outcome"] == "wrong");
  CHECK(core["3"]["attempts"][0]["answer"] == "b");
  CHECK(core["3"]["attempts"][0]["order"] == "abcd");  // --file-order
  CHECK(core["4"]["attempts"][0]["outcome"] == "skipped");
  CHECK(core["4"]["attempts"][0]["hints"] == 1);
  const auto progress = run("progress");
  CHECK(progress.code == 0);
  CHECK(has(progress.out, "b (wrong)"));
  // --resume: the questions with nothing saved, the first of them first.
  const auto resume = run("quiz --quick --device cpu --resume", "q\n");
  CHECK(has(resume.out, "Q" + std::to_string(default_track().questions.front().number) + ". "));
  CHECK_FALSE(has(resume.out, "Q3. "));
  // --retry: exactly the ones last answered wrong or skipped.
  const auto retry = run("quiz --quick --device cpu --file-order --retry", "c\nq\n");
  CHECK(has(retry.out, "Q3. "));
  CHECK(has(retry.out, "Right!"));
  const auto after = nlohmann::json::parse(slurp(saved));
  CHECK(after["quiz"][project_quiz().tracks.front().id]["questions"]["3"]["attempts"].size() == 2);
  const auto reset = run("quiz --reset");
  CHECK(reset.code == 0);
  CHECK(has(reset.out, "forgotten"));
  const auto nothing = run("quiz --retry");
  CHECK(nothing.code == 2);
  CHECK(has(nothing.err, "--retry: no question of this track was last answered wrong or skipped"));
  // Scripted answers are not the learner's: --answers saves nothing.
  CHECK(run(kTwo + " --answers ab").code == 0);
  CHECK(run("quiz --retry").code == 2);
}

TEST_CASE("a term is glossed the first time the walk shows it, once, and amp-lab glossary lists the terms") {
  const auto r = run("quiz --quick --device cpu --only 2,7 --file-order --answers ss");
  REQUIRE(r.code == 0);
  // Lab 02 shows them first; lab 07 does not gloss them again (its report has a "GradScaler: ..." row).
  CHECK(count(r.out, "  subnormal: a nonzero") == 1);
  CHECK(count(r.out, "  GradScaler: PyTorch's loss-scaling object") == 1);
  const auto g = run("glossary");
  CHECK(g.code == 0);
  for (const char* term : {"subnormal:", "GradScaler:", "ulp:", "E4M3:"}) CHECK(has(g.out, term));
}

TEST_CASE("the walk is laid out to the width: no line longer than COLUMNS at 80 and at 120") {
  for (const char* columns : {"80", "120"}) {
    CAPTURE(columns);
    const auto r =
        run(std::string("quiz --track all --quick --device cpu --only 2,3,13,14 --file-order --answers abcd"),
            "", "amp-lab", std::string("COLUMNS=") + columns);
    // Typed answers: the summary then also says where the progress was saved.
    const auto typed = run("quiz --quick --device cpu --file-order --only 1", "a\n", "amp-lab",
                           std::string("COLUMNS=") + columns);
    REQUIRE(r.code == 0);
    REQUIRE(typed.code == 0);
    REQUIRE(has(typed.out, "Progress saved in"));
    std::istringstream lines(r.out + typed.out);
    for (std::string line; std::getline(lines, line);) {
      size_t glyphs = 0;
      for (unsigned char c : line) glyphs += (c & 0xC0) != 0x80;
      CAPTURE(line);
      CHECK(glyphs <= static_cast<size_t>(std::stoi(columns)));
    }
  }
}

TEST_CASE("nothing the walk prints before a prompt gives its answer away, banner, lab and glosses included") {
  const auto all = runner::select_track(project_quiz(), runner::kAllTracks);
  const auto r = run("quiz --quick --device cpu --track all --file-order --answers " +
                     std::string(all.questions.size(), 's'));
  REQUIRE(r.code == 0);
  size_t from = 0, i = 0;  // each question's screen: from its banner to its own prompt, the prompt left out
  for (const auto& q : all.questions) {
    CAPTURE(q.number);
    const size_t banner = r.out.find("━━ " + std::to_string(++i) + "/", from);
    const size_t prompt = r.out.find("Your answer", banner);
    REQUIRE(banner != std::string::npos);
    REQUIRE(prompt != std::string::npos);
    const std::string shown =
        r.out.substr(banner, r.out.rfind("Q" + std::to_string(q.number) + ". ", prompt) - banner);
    const auto score = test_support::leak_score(shown, q.prompt, q.options, q.answer);
    CAPTURE(score.run);
    CHECK(score.share() < 0.5);
    CHECK(score.run.empty());
    // The lab ran and its measured part is in what was scored (its header line, with the run time, may be
    // left out where the screen has no room for it).
    CHECK(has(shown, "\n== "));
    from = r.out.find('\n', prompt);
  }
}

TEST_CASE("at 80x40 each question's screen, from its banner to its prompt, fits the terminal's 40 rows") {
  const auto all = runner::select_track(project_quiz(), runner::kAllTracks);
  const auto r = run("quiz --quick --device cpu --track all --file-order --answers " +
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
        terms != std::string::npos && count(screen, "\n") + 1 > 40) {
      CHECK(count(screen.substr(0, terms), "\n") <= 2);  // right under the banner
      size_t end = terms + 7;  // the line break after "Terms:"; then one gloss a line, indented
      while (screen.compare(end, 3, "\n  ") == 0) end = screen.find('\n', end + 1);
      screen = screen.substr(end + 1);
    }
    CHECK(count(screen, "\n") + 1 <= 40);  // + 1: the prompt's own line
    from = prompt;
  }
}

TEST_CASE("a lab's --report-file refuses a FIFO or a device node up front and leaves it as it was") {
  Folder dir("amp_lab_cli_report");
  std::vector<fs::path> specials{dir.path / "fifo"};
  REQUIRE(::mkfifo(specials.back().c_str(), 0600) == 0);
  // A fake node of its own, with /dev/full's numbers, in the test's folder: never the real one.
  if (::geteuid() == 0 && ::mknod((dir.path / "full").c_str(), S_IFCHR | 0600, ::makedev(1, 7)) == 0)
    specials.push_back(dir.path / "full");
  for (const fs::path& f : specials) {
    CAPTURE(f);
    const auto r = run("--quick --report-file " + q(f.string()), "", "lab15_fp16_overflow");
    CHECK(r.code == 2);
    CHECK(has(r.err, "--report-file: cannot write"));
    const auto st = fs::symlink_status(f);
    CHECK((fs::is_fifo(st) || fs::is_character_file(st)));
  }
  const auto r = run("--quick --report-file --no-color", "", "lab15_fp16_overflow");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--report-file needs a file name"));
}
