// amp-lab-exercise-gen: the build's step that reads a lab with an exercise and writes the exercise's
// context header and reference solution (src/runner/exercise_source.h). Files are written only when
// their text changes, so editing a lab's report does not rebuild its exercises.
//   amp-lab-exercise-gen LAB_FILE SHOWN_AS HEADER_NAME CONTEXT_OUT REFERENCE_OUT
#include <cstdio>
#include <exception>

#include "runner/exercise_source.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: amp-lab-exercise-gen LAB_FILE SHOWN_AS HEADER_NAME CONTEXT_OUT REFERENCE_OUT\n");
    return 2;
  }
  try {
    const runner::LabSource lab = runner::parse_lab_source(argv[2], runner::read_text_file(argv[1]));
    for (const auto& [path, text] : {std::pair{argv[4], runner::context_header(lab, argv[3])},
                                     std::pair{argv[5], runner::reference_unit(lab, argv[3])}}) {
      if (!runner::write_if_changed(path, text)) {
        std::fprintf(stderr, "amp-lab-exercise-gen: cannot write %s\n", path);
        return 3;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "amp-lab-exercise-gen: %s\n", e.what());
    return 3;
  }
  return 0;
}
