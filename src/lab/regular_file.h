// Reading a file at a path someone else controls (the learner's file, a lab's report, a cache or a log
// in a folder the learner's code can write): the one way the runner does it. Only a regular file is read:
// a FIFO is refused instead of blocking in open(), a device (/dev/zero) instead of being read forever, a
// folder with its name; and never more than a cap, so a 3 GB file costs nothing. No LibTorch.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace lab {

// "cannot read <path>: <why>", one line; error() is the errno when there is one (0 for a file of the wrong
// type or size).
class ReadError : public std::runtime_error {
 public:
  ReadError(const std::string& path, const std::string& why, int error);
  int error() const { return error_; }

 private:
  int error_;
};

struct ReadOptions {
  size_t max_bytes = 1 << 20;  // a larger file is refused (or cut, with `cut`)
  bool follow = true;          // false: a symlink at the path itself is refused (O_NOFOLLOW)
  bool cut = false;            // true: a larger file gives its first max_bytes, and *was_cut says so
};

// The file's bytes. The path is looked at before it is opened (a device node or a FIFO is never opened),
// then opened O_NONBLOCK (and O_NOFOLLOW unless `follow`) and looked at again: what was swapped in
// between is refused too. ReadError when it is missing, not a regular file, or too large.
std::string read_regular_file(const std::string& path, const ReadOptions& options = {},
                              bool* was_cut = nullptr);

// The same, from a descriptor this process holds (a memfd), from its start; `name` for messages.
std::string read_regular_fd(int fd, const std::string& name, const ReadOptions& options = {},
                            bool* was_cut = nullptr);

}  // namespace lab
