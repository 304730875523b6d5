// Prints a lab's amp.cpp with one of its exercise's kept mutations applied (tests/exercises/NN.yaml,
// support/mutations.h), for the shell tests that hand the runner a known mistake:
//   amp_lab_mutate EXERCISE MUTATION      e.g. amp_lab_mutate 09 loss-not-divided > file.cpp
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "amp_lab_paths.h"
#include "runner/exercise.h"
#include "runner/exercise_files.h"
#include "support/mutations.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: amp_lab_mutate EXERCISE MUTATION\n";
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    const runner::ExerciseInfo* e = runner::find_exercise(argv[1]);
    if (!e) throw std::invalid_argument(std::string("no exercise ") + argv[1]);
    const fs::path source(AMP_LAB_SOURCE_DIR);
    for (const auto& m :
         test_support::load_mutations((source / "tests" / "exercises" / (e->id + ".yaml")).string()))
      if (m.id == argv[2]) {
        std::cout << test_support::apply_mutation(
            m, runner::read_text_file((source / "labs" / e->stem / "amp.cpp").string()));
        return 0;
      }
    throw std::invalid_argument(std::string("exercise ") + e->id + " keeps no mutation " + argv[2]);
  } catch (const std::exception& ex) {
    std::cerr << "amp_lab_mutate: " << ex.what() << "\n";
    return 1;
  }
}
