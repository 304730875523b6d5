// The exercises kept honest: for each exercise, its starter compiles and fails the lab's checks, the
// lab's own amp.cpp (at the judge's profile) passes them, every wrong solution kept as a mutation of amp.cpp
// (tests/exercises/NN.yaml) fails them with the hint for its mistake and no other, and every correct variant
// passes. ctest runs each case once per exercise (tests/CMakeLists.txt sets AMP_LAB_TEST_EXERCISE). The
// starter and the reference are executables built with the tests, run here in quick mode as `amp-lab check`
// runs a learner's; each mutation is applied and judged through `amp-lab check`'s own path
// (runner::check_exercise: the exercise's learner unit rebuilt and run), one after another, since they
// share the exercise's work folder.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp_lab_paths.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"
#include "support/mutations.h"
#include "support/process.h"

namespace fs = std::filesystem;

namespace {

const runner::ExerciseInfo& the_exercise() {
  const char* id = std::getenv("AMP_LAB_TEST_EXERCISE");
  REQUIRE_MESSAGE(id != nullptr, "set AMP_LAB_TEST_EXERCISE to an exercise's id (ctest does)");
  const runner::ExerciseInfo* e = runner::find_exercise(id);
  REQUIRE_MESSAGE(e != nullptr, "no exercise " << id << " in exercises.yaml");
  return *e;
}

fs::path bin() {
  return fs::path(AMP_LAB_BINARY_DIR) / "exercises" / "bin";
}

// The checks the lab's own executable declares in quick mode, as `amp-lab check` requires them.
const std::vector<std::string>& declared(const runner::ExerciseInfo& e) {
  static std::map<std::string, std::vector<std::string>> by_id;
  auto& keys = by_id[e.id];
  if (keys.empty()) {
    const fs::path lab = fs::path(AMP_LAB_BINARY_DIR) / "bin" / ("lab" + e.stem);
    // The judge's own cache (kept until the lab's executable changes): the lab runs once, not per test.
    const fs::path cache = fs::path(AMP_LAB_BINARY_DIR) / "exercises" / e.stem / "reference-quick.json";
    keys = runner::lab_reference(lab.string(), cache, /*full=*/false).checks;
  }
  return keys;
}

// Runs one of the exercise's executables as `amp-lab check` does and reads its verdict.
runner::Verdict run_unit(const runner::ExerciseInfo& e, const std::string& exe) {
  const runner::LabRun run =
      runner::run_lab_executable((bin() / exe).string(), /*full=*/false, /*deadline_s=*/300);
  REQUIRE(run.deadline_s == 0);
  return runner::verdict_from_run(e, run, declared(e));
}

std::string failed_keys(const runner::Verdict& v) {
  std::string s;
  for (const auto& c : v.checks)
    if (!c.passed) s += c.key + " ";
  return s.empty() ? "(none)" : s;
}

std::string hint_ids(const runner::Verdict& v) {
  std::string s;
  for (const auto* h : v.hints) s += h->id + " ";
  return s.empty() ? "(none)" : s;
}

// The mutations kept for this exercise: wrong solutions and correct variants (support/mutations.h).
std::vector<test_support::Mutation> mutations(const runner::ExerciseInfo& e) {
  return test_support::load_mutations(
      (fs::path(AMP_LAB_SOURCE_DIR) / "tests" / "exercises" / (e.id + ".yaml")).string());
}

// Applies `m` to the lab's current amp.cpp and judges the file as `amp-lab check NN --file` does: the
// exercise's learner unit written from it, rebuilt (through ccache, where there is one) and run. The file
// stays at one path per mutation, build/exercises/mutations/NN/<id>.cpp, so that its unit is the same in
// every run and an unchanged mutation is a cache hit.
runner::Verdict judge_mutation(const runner::ExerciseInfo& e, const test_support::Mutation& m) {
  static const runner::ExerciseBuild build =
      runner::load_exercise_build(fs::path(AMP_LAB_BINARY_DIR) / "exercises" / "exercises.json");
  const fs::path dir = fs::path(AMP_LAB_BINARY_DIR) / "exercises" / "mutations" / e.id;
  fs::create_directories(dir);
  const fs::path file = dir / (m.id + ".cpp");
  const std::string amp =
      runner::read_text_file((fs::path(AMP_LAB_SOURCE_DIR) / "labs" / e.stem / "amp.cpp").string());
  runner::write_if_changed(file.string(), test_support::apply_mutation(m, amp));
  std::ostringstream progress;  // a wait for another check or build: not a failure
  return runner::check_exercise(build, e, file.string(), /*full=*/false, progress);
}

}  // namespace

nlohmann::json lab_report(const runner::ExerciseInfo& e);  // below: the lab's own report

TEST_CASE("the starter compiles and fails the lab's checks, saying which") {
  const auto& e = the_exercise();
  const runner::Verdict v = run_unit(e, "exercise" + e.id + "_starter");
  INFO("exercise " << e.id << ": failed " << failed_keys(v) << "output: " << v.output);
  CHECK(v.kind == runner::Verdict::Failed);
  CHECK(v.held() < v.judged());
  CHECK(v.checks.size() >= 2);  // the lab's report came back whole, not a crash (lab 12 has 2 checks)
}

// The lines of the verdict `amp-lab check` prints for `v`.
std::vector<std::string> printed_lines(const runner::ExerciseInfo& e, const runner::Verdict& v) {
  std::ostringstream out;
  runner::print_verdict(out, e, v, "learner.cpp", /*color=*/false);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A line that marks a check PASS names it right after the marker: "  PASS  key: claim".
bool marked_pass(const std::vector<std::string>& lines, const std::string& key) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.rfind("  PASS  " + key + ":", 0) == 0; });
}

TEST_CASE("the untouched starter fails every check of the learner's code, and no lab's own run prints PASS") {
  // A check that holds on the starter judges nothing the learner wrote: it is either the lab's own run
  // (named in exercises.yaml's lab_runs, shown as context) or a starter that pre-solves the exercise.
  const auto& e = the_exercise();
  const runner::Verdict v = run_unit(e, "exercise" + e.id + "_starter");
  REQUIRE(v.kind == runner::Verdict::Failed);
  REQUIRE(v.judged() >= 1);
  for (const auto& c : v.checks) {
    INFO("exercise " << e.id << ", check " << c.key << " (" << (c.learner ? "the learner's" : "the lab's own")
                     << "): " << c.evidence);
    if (c.learner) CHECK_FALSE(c.passed);
  }
  const auto lines = printed_lines(e, v);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  INFO(all);
  CHECK(std::none_of(lines.begin(), lines.end(), [](const auto& l) { return l.rfind("  PASS", 0) == 0; }));
  CHECK(all.find(fmt::format("not yet: your code: 0 of {} check", v.judged())) != std::string::npos);
  // The hint the starter gets, if any, is the principle alone: the API and the code are steps asked for.
  for (const auto* h : v.hints) {
    INFO("hint " << h->id);
    for (const std::string* later : {&h->api, &h->code})
      if (!later->empty()) CHECK(all.find(later->substr(0, 24)) == std::string::npos);
  }
}

TEST_CASE("the lab's own runs named for the exercise are checks of its lab, shown as context, never PASS") {
  const auto& e = the_exercise();
  const auto& keys = declared(e);
  for (const auto& k : e.lab_runs) {
    INFO("lab_runs names " << k);
    CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
  }
  // The lab's own code: every check holds; the verdict marks exactly the learner's checks PASS and counts
  // only them.
  const runner::Verdict v = run_unit(e, "exercise" + e.id + "_reference");
  REQUIRE(v.kind == runner::Verdict::Passed);
  CHECK(v.judged() == static_cast<int>(v.checks.size() - e.lab_runs.size()));
  const auto lines = printed_lines(e, v);
  for (const auto& c : v.checks) {
    INFO("check " << c.key);
    CHECK(marked_pass(lines, c.key) == c.learner);
  }
  const std::string done =
      fmt::format("exercise {} done: {} for your code", e.id, runner::all_hold(v.judged()));
  CHECK(std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.rfind(done, 0) == 0; }));
}

TEST_CASE(
    "a lab's own run that fails with the learner's file is shown as the lab's, and the exercise is not "
    "done") {
  const auto& e = the_exercise();
  if (e.lab_runs.empty()) return;
  const nlohmann::json real = lab_report(e);
  nlohmann::json broken = real;
  for (auto& c : broken["checks"])
    if (c["key"] == e.lab_runs.front()) c["passed"] = false;
  broken["passed"] = false;
  const runner::Verdict v =
      runner::verdict_from_run(e, {.report = broken.dump(), .exit_code = 1}, declared(e));
  REQUIRE(v.kind == runner::Verdict::Failed);
  CHECK(v.held() == v.judged());
  REQUIRE(v.lab_runs_failed().size() == 1);
  CHECK(runner::verdict_line(e, v).rfind(fmt::format("not yet: your code: {}, but the lab's own {} did not",
                                                     runner::all_hold(v.judged()), e.lab_runs.front()),
                                         0) == 0);
  CHECK(runner::verdict_line(e, v).rfind("not yet: ", 0) == 0);
}

TEST_CASE("a hint's steps come one at a time, principle, API, code, each recorded, then none") {
  const auto& e = the_exercise();
  const auto stepped =
      std::find_if(e.hints.begin(), e.hints.end(), [](const auto& h) { return runner::hint_steps(h) == 3; });
  REQUIRE_MESSAGE(stepped != e.hints.end(),
                  "exercise " << e.id << " has no hint with an api and a code step");
  runner::Verdict v;
  v.hints = {&*stepped};
  nlohmann::json entry = nlohmann::json::object();
  runner::record_verdict_hints(entry, v);  // the verdict showed step 1
  CHECK(entry["hints"] == 1);
  for (int step = 2; step <= 3; ++step) {
    const auto next = runner::next_hint_step(e, entry);
    REQUIRE(next.has_value());
    CHECK(next->hint == &*stepped);
    CHECK(next->step == step);
    const std::string shown = runner::render_hint_step(e, *next, 0);
    std::istringstream text(runner::hint_step(*stepped, step));  // each line of it, indented
    for (std::string line; std::getline(text, line);) CHECK(shown.find("    " + line) != std::string::npos);
    runner::record_hint_step(entry, *next);
    CHECK(entry["hint_steps"][stepped->id] == step);
    CHECK(entry["hints"] == step);
  }
  CHECK_FALSE(runner::next_hint_step(e, entry).has_value());
  // A later verdict with the same hint shows step 1 again, which counts nothing new.
  runner::record_verdict_hints(entry, v);
  CHECK(entry["hints"] == 3);
  // An entry that holds something else where the steps go is read as nothing shown, never a crash.
  entry["hint_steps"] = "three";
  CHECK(runner::next_hint_step(e, entry)->step == 1);
}

TEST_CASE("every hint of the exercise gives the API to use and then the code, after its principle") {
  const auto& e = the_exercise();
  for (const auto& h : e.hints) {
    if (h.shared) continue;
    INFO("hint " << h.id);
    CHECK(runner::hint_steps(h) == 3);
  }
}

TEST_CASE("the starter has TODO lines and names the commands that judge it") {
  const auto& e = the_exercise();
  const std::string text =
      runner::read_text_file((fs::path(AMP_LAB_SOURCE_DIR) / "labs" / e.stem / "exercise.cpp").string());
  CHECK(text.find("// TODO: ") != std::string::npos);
  CHECK(text.find("amp-lab check " + e.id) != std::string::npos);
  CHECK(text.find("#include \"amp.h\"") != std::string::npos);  // what amp.cpp includes: it takes its place
}

TEST_CASE("the lab's own code passes every check of its exercise") {
  const auto& e = the_exercise();
  const runner::Verdict v = run_unit(e, "exercise" + e.id + "_reference");
  INFO("exercise " << e.id << ": failed " << failed_keys(v) << "output: " << v.output);
  CHECK(v.kind == runner::Verdict::Passed);
  CHECK(v.held() == v.judged());
  CHECK(v.lab_runs_failed().empty());
  CHECK(v.hints.empty());
}

TEST_CASE(
    "every wrong solution kept for the exercise fails with the hint for its own mistake and no other, and "
    "every correct variant passes with none") {
  // A variant is written differently from amp.cpp (another valid order, an explicit unscale_): a judge that
  // rejects it compares the learner's code with the lab's text, not with what the code does. A second hint
  // beside a wrong solution's own names a mistake it did not make, a library's shared one included.
  const auto& e = the_exercise();
  const auto kept = mutations(e);
  CHECK_MESSAGE(std::any_of(kept.begin(), kept.end(), [](const auto& m) { return !m.variant(); }),
                "no wrong solution kept for exercise " << e.id);
  for (const auto& m : kept) {
    const runner::Verdict v = judge_mutation(e, m);
    INFO("mutation " << e.id << "/" << m.id << " (" << m.mistake << "): failed " << failed_keys(v) << "hints "
                     << hint_ids(v) << "output: " << v.output);
    CHECK(v.kind != runner::Verdict::CompileError);
    if (m.variant()) {
      CHECK(v.kind == runner::Verdict::Passed);
      CHECK(v.hints.empty());
      continue;
    }
    CHECK(v.kind != runner::Verdict::Passed);
    CHECK(v.hints.size() == 1);
    CHECK(std::any_of(v.hints.begin(), v.hints.end(), [&](const auto* h) { return h->id == m.hint; }));
  }
}

TEST_CASE("every hint of the exercise is shown for the starter or a wrong solution, or catches all") {
  // A hint no kept mistake reaches is untested text: each must be shown for the starter or a wrong
  // solution, or be the catch-all of its check (no value, observation or error to match). A wrong
  // solution's hint is the one its mutation names: the case above judges each and fails if that hint is not
  // shown, so this one runs only the starter.
  const auto& e = the_exercise();
  std::vector<std::string> shown;
  for (const auto* h : run_unit(e, "exercise" + e.id + "_starter").hints) shown.push_back(h->id);
  for (const auto& m : mutations(e))
    if (!m.variant()) shown.push_back(m.hint);
  for (const auto& h : e.hints) {
    if (h.shared) continue;  // the library's errors: the case below
    const bool seen = std::find(shown.begin(), shown.end(), h.id) != shown.end();
    const bool catch_all = h.values.empty() && h.observation.empty() && h.error.empty();
    INFO("hint " << h.id);
    CHECK((seen || catch_all));
  }
}

TEST_CASE("a library error that stops the lab gets the hint naming its rule, the exercise's own first") {
  const auto& e = the_exercise();
  std::string amp_sources;  // the amp library's messages are PyTorch's, in src/amp/*.cpp
  for (const auto& f : fs::directory_iterator(fs::path(AMP_LAB_SOURCE_DIR) / "src" / "amp"))
    if (f.path().extension() == ".cpp") amp_sources += runner::read_text_file(f.path().string());
  int shared = 0;
  for (const auto& h : e.hints) {
    if (!h.shared) continue;
    ++shared;
    const std::string line = "lab" + e.stem + ": lab failed: amp::GradScaler: " + h.error + ".";
    const runner::Verdict v = runner::verdict_from_run(e, {.err = line + "\n", .exit_code = 3}, declared(e));
    INFO("library error " << h.id << ": hints " << hint_ids(v));
    CHECK(v.kind == runner::Verdict::LabError);
    REQUIRE(v.hints.size() == 1);
    // The exercise's own hint for the same words, where it has one, names the mistake better.
    CHECK((v.hints[0]->id == h.id || !v.hints[0]->shared));
    const bool libtorch = h.id == "no-graph" || h.id == "backward-twice";  // LibTorch's autograd says these
    if (!libtorch)
      CHECK_MESSAGE(amp_sources.find(h.error) != std::string::npos, "no amp error says: " << h.error);
  }
  CHECK(shared >= 8);
}

TEST_CASE("a learner's code that crashes the lab is named by its signal, not by an exit code") {
  const auto& e = the_exercise();
  // A signal N is reported as 128+N; with nothing on stderr the verdict names how the lab ended.
  const auto ended = [&](int code) { return runner::verdict_from_run(e, {.exit_code = code}, declared(e)); };
  CHECK(ended(128 + SIGSEGV).kind == runner::Verdict::LabError);
  CHECK(ended(128 + SIGSEGV).output == "segmentation fault (signal 11)");
  CHECK(ended(128 + SIGABRT).output == "aborted (signal 6)");
  CHECK(ended(3).output == "exit code 3");
}

// The report the lab's own executable writes, for the cases below to alter.
nlohmann::json lab_report(const runner::ExerciseInfo& e) {
  const fs::path lab = fs::path(AMP_LAB_BINARY_DIR) / "bin" / ("lab" + e.stem);
  const runner::LabRun run = runner::run_lab_executable(lab.string(), /*full=*/false, /*deadline_s=*/300);
  REQUIRE(run.exit_code == 0);
  auto j = nlohmann::json::parse(run.report, nullptr, /*allow_exceptions=*/false);
  REQUIRE(j.is_object());
  return j;
}

TEST_CASE("the judge reads the report the lab wrote, never one the learner's code printed") {
  const auto& e = the_exercise();
  // A fake PASS on stdout and an exit 0 before the lab's own report: no report file, so no pass.
  const runner::Verdict fake = runner::verdict_from_run(e,
                                                        {.out = R"({"passed": true, "checks": []})"
                                                                "\n",
                                                         .exit_code = 0},
                                                        declared(e));
  CHECK(fake.kind == runner::Verdict::LabError);
  CHECK(fake.output == "the program ended (exit code 0) before the lab wrote its report");
  CHECK(fake.printed.find("\"passed\": true") != std::string::npos);  // shown as the learner's own output

  const nlohmann::json real = lab_report(e);
  // A debug line on stdout beside the real report: the verdict stands, the line is shown apart.
  const runner::Verdict debug = runner::verdict_from_run(
      e, {.report = real.dump(), .out = "debug: step 1\n", .exit_code = 0}, declared(e));
  CHECK(debug.kind == runner::Verdict::Passed);
  CHECK(debug.printed == "debug: step 1\n");

  // A report with a check missing, or none at all, is no pass even when it says passed.
  nlohmann::json fewer = real;
  fewer["checks"].erase(fewer["checks"].begin());
  const runner::Verdict missing =
      runner::verdict_from_run(e, {.report = fewer.dump(), .exit_code = 0}, declared(e));
  CHECK(missing.kind == runner::Verdict::LabError);
  CHECK(missing.output.find("missing " + real["checks"][0]["key"].get<std::string>()) != std::string::npos);
  nlohmann::json none = real;
  none["checks"] = nlohmann::json::array();
  CHECK(runner::verdict_from_run(e, {.report = none.dump(), .exit_code = 0}, declared(e)).kind ==
        runner::Verdict::LabError);

  // A passing report from a program that exited 1 (or a failing one from an exit 0): they must agree.
  const runner::Verdict disagree =
      runner::verdict_from_run(e, {.report = real.dump(), .exit_code = 1}, declared(e));
  CHECK(disagree.kind == runner::Verdict::LabError);
  CHECK(disagree.output.find("disagree") != std::string::npos);

  // A non-finite observation is null in the JSON: no hint keyed on its range matches, and nothing throws.
  nlohmann::json nulled = real;
  for (auto& [key, o] : nulled["observations"].items()) o["value"] = nullptr;
  for (auto& c : nulled["checks"]) c["passed"] = false;
  nulled["passed"] = false;
  CHECK(runner::verdict_from_run(e, {.report = nulled.dump(), .exit_code = 1}, declared(e)).kind ==
        runner::Verdict::Failed);

  // Past its deadline a program gets no verdict from its checks, whatever it wrote.
  const runner::Verdict late = runner::verdict_from_run(
      e, {.report = real.dump(), .exit_code = 128 + SIGKILL, .deadline_s = 30}, declared(e));
  CHECK(late.kind == runner::Verdict::LabError);
  CHECK(late.output.rfind("your code did not finish within 30 s", 0) == 0);
}
