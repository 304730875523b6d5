// An exercise's kept learner files, as data: tests/exercises/NN.yaml lists mutations of the lab's amp.cpp
// (wrong solutions, each with the hint it must get, and correct variants), each a few edits of amp.cpp's
// text. The one home of loading and applying them: tests/test_exercise_mutations.cpp holds every edit to
// the current amp.cpp, tests/test_exercises.cpp judges each mutated file as `amp-lab check` judges a
// learner's.
#pragma once

#include <string>
#include <vector>

namespace test_support {

// `replace`, a text that occurs exactly once in amp.cpp, becomes `with` (which may be empty).
struct MutationEdit {
  std::string replace, with;
};

struct Mutation {
  std::string id;       // "loss-not-divided": names it in the tests' messages and its file's name
  std::string mistake;  // one line: what the learner got wrong, or what a correct variant does differently
  std::string hint;     // the hint a wrong solution must get, and no other; "" for a correct variant
  std::vector<MutationEdit> edits;
  bool variant() const { return hint.empty(); }
};

// The mutations of a file tests/exercises/NN.yaml: `mutations`, a non-empty list of mappings with `id`
// (unique in the file), `mistake`, either `hint` or `pass: true`, and `edits`, a non-empty list of
// {replace, with}, taken exactly as written (a block scalar keeps its last newline, `|-` drops it).
// Throws runner::DataError, one line "file:line:column: field: what".
std::vector<Mutation> load_mutations(const std::string& path);

// What keeps `m` from applying to `source` ("" when nothing): a `replace` text that does not occur exactly
// once, or two edits whose texts overlap.
std::string mutation_problem(const Mutation& m, const std::string& source);

// `source` with every edit of `m` made. Throws std::invalid_argument (mutation_problem's line) when it
// does not apply.
std::string apply_mutation(const Mutation& m, const std::string& source);

}  // namespace test_support
