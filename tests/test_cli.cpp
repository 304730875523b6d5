// The amp-lab command, driven as a user drives it: real binary, scripted stdin, output and exit codes.
#include <doctest/doctest.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

fs::path scratch(const std::string& name) { return fs::temp_directory_path() / ("amp_lab_cli_" + name); }

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

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
      {"quiz --seed -3", "--seed must be a non-negative integer, got '-3'"},
      {"run 3 --seed 1e9", "--seed must be a non-negative integer, got '1e9'"},
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
  }
  fs::remove(bad_quiz);
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

TEST_CASE("Ctrl-C at the prompt ends the quiz with the summary") {
  // The quiz waits on a FIFO that never delivers a line; SIGINT arrives once the prompt is shown.
  const fs::path dir = scratch("sigint_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string d = dir.string();
  std::ofstream(dir / "run.sh") << "cd '" << d << "'\nmkfifo in\nexec 3<>in\n"
                                 << "NO_COLOR=1 '" AMP_LAB_BINARY_DIR "/bin/amp-lab' quiz --quick --device cpu --only 3 <in >out 2>err &\n"
                                 << "pid=$!\nfor i in $(seq 300); do grep -q 'Your answer' out && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done\n"
                                 << "kill -INT $pid\nwait $pid\necho $? > code\n";
  REQUIRE(std::system(("bash '" + (dir / "run.sh").string() + "'").c_str()) == 0);
  const std::string out = slurp(dir / "out");
  CHECK(has(out, "Stopped (interrupted)."));
  CHECK(has(out, "Summary"));
  CHECK(std::stoi(slurp(dir / "code")) == 0);
  fs::remove_all(dir);
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
