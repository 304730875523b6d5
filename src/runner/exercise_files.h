// The files an exercise check reads and writes: the learner's file, and the unit the build compiles from it.
// Nothing here needs LibTorch.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace runner {

// A file an exercise needs that cannot be read or written, or a build that is not what it should be: one
// line, shown as it is.
struct ExerciseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The learner's file as the translation unit the exercise builds: a #line directive first, so that the
// compiler names the learner's own file and lines (any path: its quotes, backslashes and control bytes
// escaped), then the file unchanged but for a UTF-8 byte-order mark at its start, which is dropped (the
// compiler skips one only at the start of a file).
std::string learner_unit(const std::string& learner_path, const std::string& text);

// The largest source file read (the learner's, a lab's amp.cpp or starter): a few KB in practice.
inline constexpr size_t kMaxSourceBytes = 1 << 20;

// Reads a whole regular file of at most kMaxSourceBytes, a symlink to one included (lab/regular_file.h);
// throws ExerciseError ("cannot read <path>: <why>") for anything else: missing, a FIFO, a device, larger.
std::string read_text_file(const std::string& path);
// Writes `text` as the file, whole or not at all (amp/detail/atomic_file.h), unless it already holds
// exactly that (so a build sees no change). Throws ExerciseError ("cannot write <path>: <why>").
void write_if_changed(const std::string& path, const std::string& text);

}  // namespace runner
