// The walk through the real amp-lab: scripted and typed answers, what it shows before and after each
// prompt, the tracks, each lab's header, the summary and the progress it saves; at a terminal, the pause
// after each answer.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "runner/quiz.h"
#include "support/answer_leak.h"
#include "support/cli.h"
#include "support/terminal.h"
#include "support/walk.h"

namespace test_walk_cli {

namespace fs = std::filesystem;
using namespace test_support;

const std::string kRunner = AMP_LAB_BINARY_DIR "/bin/amp-lab";
// A pty whose size is not set, as forkpty leaves it: the width falls back to 80.
constexpr unsigned kNoSize = 0;

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

// ---- The summary and saved progress -----------------------------------------------------------------------

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

TEST_CASE(
    "typed answers are saved as the walk goes: --resume goes on, --retry asks the missed, --reset forgets") {
  const fs::path saved = state_home() / "amp-lab" / "progress.json";
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

// ---- At a terminal ----------------------------------------------------------------------------------------

TEST_CASE("at a terminal the walk pauses after each explanation: Enter goes on to the next lab") {
  Terminal t({kRunner, "quiz", "--quick", "--device", "cpu", "--file-order", "--only", "3,8"}, kNoSize,
             kNoSize);
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
  Terminal t({kRunner, "quiz", "--quick", "--device", "cpu", "--file-order", "--only", "3,8"}, kNoSize,
             kNoSize);
  REQUIRE(t.expect("Your answer"));
  t.type("c\n");
  REQUIRE(t.expect("Enter next question · "));
  t.type("q\n");
  REQUIRE(t.expect("Stopped (quit)."));
  REQUIRE(t.expect("Score: 1/2 right"));
  t.wait_exit();
  CHECK(t.screen().find("Q8.") == std::string::npos);
}

}  // namespace test_walk_cli
