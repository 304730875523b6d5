// The exercises' kept learner files, as mutations of each lab's amp.cpp (tests/exercises/NN.yaml,
// support/mutations.h), held to the current source without building anything: each edit's text occurs
// exactly once in amp.cpp and the edits of one mutation do not overlap, so a reformat of amp.cpp cannot
// break one unseen; each hint a mutation names is one its exercise has. tests/test_exercises.cpp builds
// and judges them.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "amp_lab_paths.h"
#include "runner/data_files.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"
#include "support/mutations.h"

namespace {

namespace fs = std::filesystem;

fs::path exercises_dir() {
  return fs::path(AMP_LAB_SOURCE_DIR) / "tests" / "exercises";
}

std::string amp_cpp(const runner::ExerciseInfo& e) {
  return runner::read_text_file((fs::path(AMP_LAB_SOURCE_DIR) / "labs" / e.stem / "amp.cpp").string());
}

}  // namespace

TEST_CASE("every exercise keeps its learner files as mutations of its amp.cpp, and only those") {
  for (const auto& e : runner::exercises()) {
    INFO("exercise " << e.id);
    CHECK(fs::is_regular_file(exercises_dir() / (e.id + ".yaml")));
  }
  // Nothing else: no file there that no exercise reads, no whole copy of an amp.cpp.
  for (const auto& f : fs::directory_iterator(exercises_dir())) {
    INFO(f.path().string());
    CHECK(f.path().extension() == ".yaml");
    CHECK(runner::find_exercise(f.path().stem().string()) != nullptr);
  }
}

TEST_CASE("each mutation's edits apply exactly once to the lab's current amp.cpp, none overlapping") {
  for (const auto& e : runner::exercises()) {
    const std::string source = amp_cpp(e);
    const auto mutations = test_support::load_mutations((exercises_dir() / (e.id + ".yaml")).string());
    CHECK(!mutations.empty());
    for (const auto& m : mutations) {
      INFO("exercise " << e.id << ", mutation " << m.id);
      CHECK(test_support::mutation_problem(m, source) == "");
      const std::string mutated = test_support::apply_mutation(m, source);
      CHECK(mutated != source);  // a mutation changes the code
    }
  }
}

TEST_CASE("each wrong solution names a hint its exercise has, and each exercise keeps a correct variant") {
  for (const auto& e : runner::exercises()) {
    int variants = 0;
    for (const auto& m : test_support::load_mutations((exercises_dir() / (e.id + ".yaml")).string())) {
      INFO("exercise " << e.id << ", mutation " << m.id << ": hint " << m.hint);
      if (m.variant()) {
        ++variants;
        continue;
      }
      CHECK(std::any_of(e.hints.begin(), e.hints.end(), [&](const auto& h) { return h.id == m.hint; }));
    }
    INFO("exercise " << e.id);
    CHECK(variants >= 1);
  }
}

TEST_CASE("a mutation whose text occurs twice, not at all or overlapping another is refused, saying which") {
  const std::string source = "int a = 1;\nint b = 1;\n";
  const auto refused = [&](const test_support::Mutation& m) {
    CHECK_THROWS_AS(test_support::apply_mutation(m, source), std::invalid_argument);
    return test_support::mutation_problem(m, source);
  };
  CHECK(refused({.id = "twice", .edits = {{"= 1;", "= 2;"}}}).find("occurs 2 times") != std::string::npos);
  CHECK(refused({.id = "none", .edits = {{"int c", "int d"}}}).find("occurs 0 times") != std::string::npos);
  CHECK(refused({.id = "overlap", .edits = {{"a = 1", "a = 2"}, {"1;\nint b", "2;\nint b"}}})
            .find("edits 1 and 2 overlap") != std::string::npos);
  // Edits apply at the places they were found in the original, whatever their order in the list.
  CHECK(test_support::apply_mutation({.id = "two", .edits = {{"int b", "long b"}, {"int a", "long a"}}},
                                     source) == "long a = 1;\nlong b = 1;\n");
}

TEST_CASE("a mutations file with a bad entry is refused in one line naming the field") {
  const fs::path dir = fs::temp_directory_path() / ("amp_lab_mutations_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto refusal = [&](const std::string& text) {
    const std::string path = (dir / "bad.yaml").string();
    runner::write_if_changed(path, text);
    try {
      test_support::load_mutations(path);
    } catch (const runner::DataError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string edits = "    edits:\n      - replace: a\n        with: b\n";
  CHECK(refusal("mutations:\n  - id: x\n    mistake: m\n" + edits).find("needs a hint") != std::string::npos);
  CHECK(refusal("mutations:\n  - id: x\n    mistake: m\n    hint: h\n    pass: true\n" + edits)
            .find("both a hint and pass") != std::string::npos);
  CHECK(refusal("mutations:\n  - id: x\n    mistake: m\n    hint: h\n    edits:\n      - replace: a\n        "
                "with:\n")
            .find("edits[1].with") != std::string::npos);
  CHECK(refusal("mutations:\n  - id: x\n    mistake: m\n    hint: h\n" + edits +
                "  - id: x\n    mistake: m\n"
                "    hint: h\n" +
                edits)
            .find("given twice") != std::string::npos);
  // A block scalar is taken as written: its last newline kept, or dropped with |-.
  runner::write_if_changed((dir / "ok.yaml").string(),
                           "mutations:\n  - id: x\n    mistake: m\n    pass: true\n    edits:\n"
                           "      - replace: |2\n            a;\n        with: |-\n          b;\n");
  const auto ok = test_support::load_mutations((dir / "ok.yaml").string());
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].edits[0].replace == "  a;\n");
  CHECK(ok[0].edits[0].with == "b;");
  CHECK(ok[0].variant());
  fs::remove_all(dir);
}
