// The command lines of amp-lab and the labs, driven as a user drives them (real binaries, scripted stdin,
// output and exit codes): bad input, each flag's value, hostile names, the labs' names, --help, --dtype,
// list, info and run.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "runner/quiz.h"
#include "support/cli.h"
#include "support/folder.h"
#include "support/walk.h"

namespace test_cli {

namespace fs = std::filesystem;
using namespace test_support;

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
  // %b: printf's format may not start with "--" (dash reads it as an option and prints nothing).
  const auto option = run("\"$(printf '%b' \"--\\033[2J\")\"");
  CHECK(option.code == 2);
  CHECK(has(option.err, "\\x1b[2J"));
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

// ---- Names, help, dtypes ----------------------------------------------------------------------------------

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

}  // namespace test_cli
