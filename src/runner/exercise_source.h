// An exercise's code, read from its lab's file. A lab with an exercise marks the code the learner writes:
//
//   }  // namespace                                 the lab's constants and helpers end here
//   // ---- The AMP code ----
//   namespace lab09 {                               a named namespace: the code links across files
//   #ifndef AMP_LAB_EXERCISE                        what the learner writes: the lab's own code ...
//   bool accumulate(...) { ... }
//   #else                                           ... and, built as the exercise's harness, only its
//   bool accumulate(...);                           declarations; the learner's file defines them
//   #endif  // AMP_LAB_EXERCISE
//   }  // namespace lab09
//   namespace {
//   using namespace lab09;                          the rest of the lab calls it as before
//
// A block may also sit inside a class (lab 14: Fp8Scale::quantize); the learner then defines those
// member functions outside the class. From the lab file this makes:
//   - the context header the learner's file includes: the lab's includes (see left_out_include) and
//     its text from there to the last block, each block as its declarations, then the braces that close
//     what is still open. #line directives point its diagnostics at the lab file.
//   - the reference solution: the blocks' own code, in their namespaces, members moved out of their class.
//   - the solution a learner asks for (`--solution`): the blocks exactly as the lab has them.
// Nothing here needs LibTorch.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace runner {

// A lab file that does not follow the convention above: "<file>:<line>: <what>".
struct ExerciseSourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ExerciseBlock {
  size_t ifndef_line = 0, else_line = 0, endif_line = 0;  // 0-based line indices
  std::vector<std::string> namespaces;                    // the named namespaces around it, outermost first
  std::string class_name;                                 // set when the block is inside a class
};

struct LabSource {
  std::string path;  // as diagnostics name it: "labs/09_gradient_accumulation.cpp"
  std::vector<std::string> lines;
  std::vector<size_t> includes;  // the #include lines before the code
  size_t code_begin = 0;         // the first line after them
  std::vector<ExerciseBlock> blocks;
  size_t context_end = 0;            // one past the context's last line (the last block's closing braces)
  std::vector<std::string> closers;  // what closes the scopes still open there, innermost first
};

// Throws ExerciseSourceError when the file has no block or breaks the convention.
LabSource parse_lab_source(const std::string& path, const std::string& text);

// The includes the context leaves out: <torch/torch.h> (runner/exercise_pch.h stands in for it) and
// those of the lab's report (fmt, the registry, the report, the charts), never needed by its AMP code.
bool left_out_include(const std::string& include_line);

// `header_name`: how the learner's file includes it ("exercise/09_gradient_accumulation.h").
std::string context_header(const LabSource& lab, const std::string& header_name);
// A complete translation unit: the context header, then the blocks' code.
std::string reference_unit(const LabSource& lab, const std::string& header_name);
// The blocks as the lab has them, each headed by its lines ("labs/09_...cpp, lines 54-73").
std::string solution_text(const LabSource& lab);

// The learner's file as the translation unit the exercise builds: a #line directive first, so that the
// compiler names the learner's own file and lines, then the file unchanged.
std::string learner_unit(const std::string& learner_path, const std::string& text);

// Reads a whole file; throws ExerciseSourceError ("cannot read <path>: <why>").
std::string read_text_file(const std::string& path);
// Writes `text` unless the file already holds exactly it (so a build sees no change); false on failure.
bool write_if_changed(const std::string& path, const std::string& text);

}  // namespace runner
