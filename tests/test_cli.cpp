// The amp-lab command, driven as a user drives it: real binary, scripted stdin, output and exit codes.
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/mount.h>
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

// Per process, so that test runs in other clones at the same time do not share files.
fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("amp_lab_cli_" + std::to_string(::getpid()) + "_" + name);
}

// Runs `build/bin/<program> <args>` with `input` on stdin; NO_COLOR keeps the output plain.
Result run(const std::string& args, const std::string& input = "", const std::string& program = "amp-lab") {
  static int n = 0;
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(n++);
  const fs::path in = scratch(tag + ".in"), out = scratch(tag + ".out"), err = scratch(tag + ".err");
  std::ofstream(in) << input;
  const std::string cmd = "NO_COLOR=1 \"" AMP_LAB_BINARY_DIR "/bin/" + program + "\" " + args + " < \"" +
                          in.string() + "\" > \"" + out.string() + "\" 2> \"" + err.string() + "\"";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  fs::remove(in), fs::remove(out), fs::remove(err);
  return r;
}

// Runs a shell script (for redirections run() does not make); returns its exit code.
int sh(const std::string& script) {
  const int status = std::system(("bash -c '" + script + "'").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
const std::string kTwo = "quiz --quick --device cpu --only 3,8";

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

TEST_CASE("interactive input: invalid answers prompt again, upper case counts, h shows the hint") {
  const auto r = run(kTwo, "x\n\nh\nC\n  d \n");
  CHECK(r.code == 0);
  CHECK(count(r.out, "Please answer with one letter a-d") == 2);
  CHECK(has(r.out, "Hint: "));
  CHECK(has(r.out, "Score: 2/2 right"));
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
  CHECK(has(r.out, "Score: 1/2 right (0 wrong, 0 skipped, 1 not reached)"));
  CHECK(r.err.empty());
}

TEST_CASE("q quits with the summary") {
  const auto r = run(kTwo, "q\n");
  CHECK(r.code == 0);
  CHECK(has(r.out, "Stopped (quit)."));
  CHECK(has(r.out, "Summary"));
  CHECK(has(r.out, "Score: 0/2 right"));
}

TEST_CASE("before the prompt the walk shows what the lab measured, and its checks and title only after the answer") {
  const auto lab = run("run number-formats --quick --json");
  REQUIRE(lab.code == 0);
  const auto report = nlohmann::json::parse(lab.out);
  REQUIRE(report["checks"].size() > 0);
  const auto r = run("quiz --quick --device cpu --only 3 --answers c");
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
    CHECK_FALSE(has(before, claim));
    CHECK(has(after, claim));
  }
  CHECK(after.find("verdict: PASS") < after.find("The answer is c)"));
  CHECK_FALSE(has(r.out, "Enter: next lab"));  // scripted: no pause
}

TEST_CASE("--reveal shows the answer key, and --json writes all eight labs") {
  const fs::path json = scratch("walk.json");
  const auto r = run("quiz --reveal --quick --device cpu --json " + json.string());
  CHECK(r.code == 0);
  CHECK(count(r.out, "<- answer") == 8);
  CHECK(count(r.out, "Why: ") == 8);
  REQUIRE(fs::exists(json));
  const auto j = nlohmann::json::parse(slurp(json));
  fs::remove(json);
  REQUIRE(j["questions"].size() == 8);
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
  for (const char* lab : {"gradient-accumulation", "gradient-penalty", "multiple-optimizers", "custom-autograd"})
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

TEST_CASE("amp-lab list names all eight labs and info reports the LibTorch build") {
  const auto list = run("list");
  CHECK(list.code == 0);
  CHECK(has(list.out, "track core:"));
  for (const char* lab : {"master-weights", "loss-scaling", "number-formats", "fp32-accumulation",
                          "memory-throughput", "amp-api", "bf16-scaling", "autocast-policy"})
    CHECK(has(list.out, lab));
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
  const auto core = run(base + " --answers c");  // the default track
  CHECK(core.code == 0);
  CHECK(has(core.out, "Q1. Which?"));
  CHECK_FALSE(has(core.out, "Q2. What?"));
  CHECK(has(core.out, "Score: 1/1 right"));

  const auto other = run(base + " --track other --answers d");
  CHECK(other.code == 0);
  CHECK(has(other.out, "Track other: The second track (1 questions)"));
  CHECK(has(other.out, "Q2. What?"));
  CHECK_FALSE(has(other.out, "Q1. Which?"));
  CHECK(has(other.out, "Score: 1/1 right"));

  const auto only = run(base + " --track other --only 2 --answers d");
  CHECK(only.code == 0);
  CHECK(has(only.out, "Q2. What?"));
  const auto outside = run(base + " --track other --only 1 --answers d");
  CHECK(outside.code == 2);
  CHECK(has(outside.err, "--only '1': expected question numbers from 2 to 2"));

  const auto all = run(base + " --track all --answers cd");
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
  const Case cases[] = {
      {"frobnicate", "unknown command 'frobnicate'"},
      {"quiz --frob", "frob"},
      {"quiz --only 9", "--only '9': expected question numbers from 1 to 8"},
      {"quiz --only 1,x", "--only '1,x'"},
      {"quiz --track nope", "--track: no track named 'nope' (tracks: core"},
      {"list --frob", "frob"},
      {"quiz --answers ab", "--answers has 2 letters for 8 questions"},
      {"quiz --answers zzzzzzzz", "'z' is not one of a, b, c, d or s"},
      {"quiz --dtype fp32", "--dtype must be fp16 or bf16, got 'fp32'"},
      {"quiz --device tpu", "--device must be auto, cpu or cuda, got 'tpu'"},
      {"quiz --seed -3", "--seed must be a non-negative integer below 2^64, got '-3'"},
      {"run 3 --seed 1e9", "--seed must be a non-negative integer below 2^64, got '1e9'"},
      {"quiz --seed \" -1\"", "--seed must be a non-negative integer below 2^64, got ' -1'"},
      {"quiz --only 3,", "--only '3,': expected question numbers from 1 to 8"},
      {"info --bogus", "bogus"},
      {"info extra", "unexpected argument 'extra'"},
      {"list extra", "unexpected argument 'extra'"},
      {"run 3 --flip=maybe", "maybe"},
      {"quiz --quiz /tmp", "/tmp: cannot read the quiz file: it is a directory, not a quiz file"},
      {"quiz --seed=" + std::string(40000, '1'), "is 40007 bytes long; the limit is 4200"},
      {"--" + std::string(30000, 'y'), "is 30002 bytes long"},
      {"run 3 -" + std::string(30000, 'q'), "is 30001 bytes long"},
      {"quiz --quiz " + std::string(40000, 'p'), "is 40000 bytes long"},
      {"quiz --quiz " + bad_quiz.string(), bad_quiz.string() + ":3:5: questions[0].prompt: missing (required)"},
      {"run no-such-lab", "no lab named 'no-such-lab'"},
      {"run", "which lab?"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run(c.args);
    CHECK(r.code == 2);
    CHECK(has(r.err, c.message));
    CHECK(count(r.err, "\n") == 1);  // one line, no stack trace
    CHECK(r.err.size() < 600);        // a 40 KB argument is not echoed whole
  }
  fs::remove(bad_quiz);
}

TEST_CASE("a flag's value is honoured: --flip=false, --json=false, --quick=0, --reveal=false") {
  CHECK(run("run number-formats --quick --flip").code == 1);  // the counterfactual fails the checks
  CHECK(run("run number-formats --quick --flip=false").code == 0);
  const auto text = run("run number-formats --quick --json=false");
  CHECK(text.code == 0);
  CHECK(has(text.out, "verdict: PASS"));
  CHECK(text.out.rfind("{", 0) != 0);  // not JSON
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
  const auto prompt = run("quiz --quick --device cpu --only 3", "\x1b[2J\nc\n");
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
  text.replace(at, 5, "Mix\xe9" "d");
  const size_t line_start = text.rfind('\n', at) + 1;  // where the bad byte is: line and column, from 1
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  const auto column = at + 3 - line_start + 1;
  std::ofstream(quiz) << text;
  fs::remove(json);
  const auto r = run("quiz --reveal --quick --device cpu --quiz " + quiz.string() + " --json " + json.string());
  CHECK(r.code == 2);
  CHECK(has(r.err, ":" + std::to_string(line) + ":" + std::to_string(column) + ": encoding: byte '\\xe9' is not UTF-8"));
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
  const std::string bin = AMP_LAB_BINARY_DIR "/bin/";
  const fs::path err = scratch("write_err_" + std::to_string(::getpid()));
  CHECK(sh(bin + "amp-lab list > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "amp-lab list: cannot write to standard output: No space left on device"));
  CHECK(sh(bin + "lab03_number_formats --quick > /dev/full 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "lab03_number_formats: cannot write to standard output"));
  CHECK(sh(bin + "amp-lab list >&- 2> " + err.string()) == 3);
  CHECK(has(slurp(err), "standard output is closed"));
  CHECK(sh(bin + "amp-lab quiz --reveal --quick --device cpu --only 3 --json /dev/full > /dev/null 2> " + err.string()) == 3);
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
  const std::string cmd = AMP_LAB_BINARY_DIR "/bin/lab03_number_formats --quick";
  // script(1) gives the lab a pseudo-terminal, where it would use colour.
  REQUIRE(sh("TERM=xterm script -qec \"" + cmd + "\" /dev/null > " + out.string()) == 0);
  CHECK(has(slurp(out), "\x1b["));  // colour on a terminal: the test can tell
  REQUIRE(sh("TERM=dumb script -qec \"" + cmd + "\" /dev/null > " + out.string()) == 0);
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
                                 << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " << args << " <in >out 2>err &\n"
                                 << "pid=$!\nfor i in $(seq 600); do grep -q '" << ready
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

TEST_CASE("Ctrl-C while a lab runs stops after it with the summary, and three stop it at once") {
  // Question 4's full-size lab runs for about a second, long enough to be interrupted in the middle.
  const auto once = signalled("quiz --device cpu --only 4", "1/1 · lab", "INT");
  CHECK(has(once.out, "Stopped (interrupted)."));
  CHECK_FALSE(has(once.out, "Your answer"));
  CHECK(once.code == 130);
  const auto thrice = signalled("quiz --device cpu --only 4", "1/1 · lab", "INT INT INT");
  CHECK_FALSE(has(thrice.out, "Summary"));  // killed by the third signal, not ended by the walk
  CHECK(has(thrice.err, "once more to stop at once"));
  CHECK(thrice.code == 130);
}

namespace {

// amp-lab on a pseudo-terminal, as a person runs it: stdin is a tty, so the walk pauses between labs.
class Terminal {
 public:
  explicit Terminal(const std::string& args) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::setenv("NO_COLOR", "1", 1);
      const std::string cmd = "exec '" AMP_LAB_BINARY_DIR "/bin/amp-lab' " + args;
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
  void type(const std::string& keys) { REQUIRE(::write(fd_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }
  int wait_exit() {
    while (expect("\x01never\x01")) {}
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
  Terminal t("quiz --quick --device cpu --only 3,8");
  REQUIRE(t.expect("Your answer"));
  t.type("c\n");
  REQUIRE(t.expect("Why: "));
  REQUIRE(t.expect("Enter: next lab, q: quit"));
  CHECK(t.screen().find("Q8.") == std::string::npos);  // the next lab waits for Enter
  t.type("\n");
  REQUIRE(t.expect("Q8."));
  REQUIRE(t.expect("Your answer"));
  t.type("d\n");
  REQUIRE(t.expect("Score: 2/2 right"));
  CHECK(t.wait_exit() == 0);
  CHECK(t.screen().find("Enter: next lab") == t.screen().rfind("Enter: next lab"));  // none after the last
}

TEST_CASE("at a terminal, q at the pause ends the walk with its summary") {
  Terminal t("quiz --quick --device cpu --only 3,8");
  REQUIRE(t.expect("Your answer"));
  t.type("c\n");
  REQUIRE(t.expect("Enter: next lab, q: quit"));
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
    if (::mount("tmpfs", folder.path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=8k") == 0) mounted = true;
    else why_not = std::string("cannot mount a tmpfs here (") + std::strerror(errno) + ")";
  }
  ~FullDisk() {
    if (mounted) ::umount2(folder.path.c_str(), MNT_DETACH);
  }
};

// Runs lab 06 in quick mode through bash with `prefix` before it (environment, ulimit), stdout discarded.
Result lab06(const std::string& prefix) {
  const fs::path err = scratch("lab06_" + std::to_string(::getpid()) + ".err");
  const int code = sh(prefix + " NO_COLOR=1 exec \"" AMP_LAB_BINARY_DIR "/bin/lab06_amp_api\" --quick > /dev/null 2> " +
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
  CHECK(has(r.err, "lab06_amp_api: lab failed: checkpoint: cannot write " + full.folder.path.string() + "/"));
  CHECK(has(r.err, ": No space left on device\n"));
  CHECK_FALSE(has(r.err, "frame #"));
  CHECK(full.folder.entries().empty());  // no checkpoint, no temporary file, no scratch folder
}

TEST_CASE("a file-size limit under lab 06's checkpoint also ends it with exit 3 and one line") {
  // ulimit -f needs no privilege; with SIGXFSZ ignored the write fails with EFBIG instead of killing the lab.
  Folder tmp("amp_lab_cli_fsize");
  const auto r = lab06("ulimit -f 16; trap \"\" XFSZ; TMPDIR=" + tmp.path.string());
  CHECK(r.code == 3);
  CHECK(count(r.err, "\n") == 1);
  CHECK(has(r.err, "lab06_amp_api: lab failed: checkpoint: cannot write " + tmp.path.string() + "/"));
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

TEST_CASE("lab 06 leaves a symlink planted at its old predictable scratch name, and the file it points to, untouched") {
  Folder tmp("amp_lab_cli_symlink"), elsewhere("amp_lab_cli_victim");
  const fs::path victim = elsewhere.path / "precious.txt";
  std::ofstream(victim) << "precious";
  // The name lab 06 used before: amp_lab_06_<pid>.pt in TMPDIR; exec keeps the shell's pid for the lab.
  const auto r = watch(tmp.path, kLab06 + " --quick", "ln -s '" + victim.string() + "' \"$TMPDIR/amp_lab_06_$$.pt\"");
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

TEST_CASE("lab 06 killed by SIGTERM, SIGINT or SIGHUP mid-run removes its private scratch folder and dies by the signal") {
  for (const auto& [name, number] : {std::pair<std::string, int>{"TERM", 15}, {"INT", 2}, {"HUP", 1}}) {
    CAPTURE(name);
    Folder tmp("amp_lab_cli_signal");
    const auto r = watch(tmp.path, kLab06, "", name);  // default size: long enough to be caught mid-run
    REQUIRE(r.seen_mode == "700");  // the signal came while the scratch folder existed; only we can enter it
    CHECK(r.code == 128 + number);  // ended by the signal itself, as without a handler
    CHECK(tmp.entries().empty());
  }
}

TEST_CASE("under amp-lab, SIGTERM during lab 06 ends the walk with its summary and leaves no scratch folder") {
  Folder tmp("amp_lab_cli_walk");
  const auto r = watch(tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "", "TERM");
  REQUIRE(r.seen_mode == "700");
  CHECK(has(r.out, "Stopped (terminated)."));
  CHECK(has(r.out, "Summary"));
  CHECK(r.code == 143);
  CHECK(tmp.entries().empty());
}

TEST_CASE("under amp-lab, a third Ctrl-C during lab 06 stops at once and still leaves no scratch folder") {
  Folder tmp("amp_lab_cli_walk3");
  const auto r = watch(tmp.path, "\"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" quiz --device cpu --only 6 < /dev/null", "",
                       "INT INT INT");
  REQUIRE(r.seen_mode == "700");
  CHECK_FALSE(has(r.out, "Summary"));  // killed by the third signal, not ended by the walk
  CHECK(has(r.err, "once more to stop at once"));
  CHECK(r.code == 130);
  CHECK(tmp.entries().empty());
}
