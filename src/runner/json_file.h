// The walk's --json file. Checked and prepared before the first lab runs (an unwritable path, or one that
// is a file the walk reads, is refused up front); written at the end into a temporary file beside it, then
// renamed over it (amp/detail/atomic_file.h), so the file is always one complete run's output, even with two
// walks writing it at once.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "amp/detail/atomic_file.h"
#include "runner/data_files.h"

namespace runner {

class JsonFile {
 public:
  // lab::UsageError when runner::check_output_path refuses `path` (empty, the next flag, or a file amp-lab
  // reads: the data files, the progress, the labs' sources, or one of `inputs`, the --quiz file) or when it
  // cannot be written.
  JsonFile(const std::string& path, const std::vector<Input>& inputs);
  ~JsonFile();  // removes the temporary file unless commit() renamed it
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;

  // Writes `text`, flushes it to disk and renames it over the path; lab::OutputError naming the path and
  // the cause on failure (the path is then left as it was).
  void commit(const std::string& text);

 private:
  std::string path_;                             // as given, for messages
  std::string target_;                           // the real file written (symlinks resolved)
  std::optional<amp::detail::AtomicFile> file_;  // its temporary twin; none when writing to a device or FIFO
  int fd_ = -1;                                  // the device or FIFO
};

}  // namespace runner
