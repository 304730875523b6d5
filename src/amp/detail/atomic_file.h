// The one way this project writes a file whole or not at all: the checkpoints (amp/checkpoint.cpp), the
// runner's saved progress and --json file, the exercises' files and the ranks' process ids. The standard
// library and POSIX only, and C++17, so the amp library keeps needing nothing but LibTorch and the runner
// (no LibTorch) links the same code. Not installed: no public amp header includes it.
//
// How: a temporary file beside the target, in the same folder (so the rename stays on one file system),
// under a hidden name unique to this process, call and attempt (".<name>.tmp.<pid>.<n>.<random>"), made
// with O_CREAT|O_EXCL|O_NOFOLLOW: nothing planted at that name is followed, opened or truncated. The text
// is written in full, the file fsynced and closed, then renamed over the target (a symlink at the target
// is replaced, not followed) and the folder fsynced, so the rename survives a power cut too.
//   - The target holds the old file or the whole new one, never a part: a reader, a second writer or a
//     crash at any moment sees one or the other.
//   - On any error the temporary file is removed and the target left as it was. A crash (SIGKILL, power)
//     before the rename leaves the old file intact and may leave the hidden temporary file behind.
//   - Permissions: a new file gets `mode` less the umask, as open() gives; a file replaced keeps its
//     permission bits (rwx for user, group and others; not set-id or sticky bits, nor its owner).
//   - Only a regular file (or a symlink, itself replaced) is replaced: a device node, a FIFO or a socket at
//     the target is refused with ENOTSUP, a folder with EISDIR, in the constructor and again just before
//     the rename, and left as it was (a rename would have put a plain file in place of /dev/full).
//   - Replace::No never replaces anything: the file is linked in under the target's name only if nothing
//     is there (renameat2 RENAME_NOREPLACE, or link() where the file system lacks it), else EEXIST.
//   - A folder that cannot be fsynced (some file systems refuse) is not an error: the file is in place.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <system_error>

namespace amp::detail {

// What failed, in one line: "cannot write <path>: <cause>", the cause as strerror() says it ("No space left
// on device"). path() is the target as given, code() the errno, so that a caller can say it its own way.
class AtomicFileError : public std::runtime_error {
 public:
  AtomicFileError(const std::string& path, int error);
  const std::string& path() const { return path_; }
  std::error_code code() const { return {error_, std::system_category()}; }

 private:
  std::string path_;
  int error_;
};

enum class Replace { Yes, No };

struct AtomicFileOptions {
  mode_t mode = 0666;              // a new file's permission bits, less the umask
  Replace replace = Replace::Yes;  // No: EEXIST when anything is at the target already
};

// One file being written. The temporary file exists from the constructor on; commit() puts it in place;
// the destructor removes it unless commit() did.
class AtomicFile {
 public:
  // Creates the temporary file beside `path`: AtomicFileError (the folder is missing or unwritable, ...).
  explicit AtomicFile(std::string path, AtomicFileOptions options = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends bytes. Never throws: the first error is kept, later writes are skipped, and commit() reports
  // it (a writer called back from inside a serializer, as checkpoint.cpp's is, must not throw). False once
  // a write has failed.
  bool write(const void* data, size_t size) noexcept;
  bool write(const std::string& text) noexcept { return write(text.data(), text.size()); }

  // fsync, close, rename over the target (or link it in, with Replace::No), fsync of the folder. Throws
  // AtomicFileError with the first error of the writes or of these steps; the target is then as it was.
  void commit();

  const std::string& path() const { return path_; }
  // The temporary file's path while it exists ("" once committed or removed): for a signal handler that
  // removes it when the process ends at once (runner/interrupt.h).
  const std::string& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(int error);  // removes the temporary file and throws
  std::string path_, temp_;
  AtomicFileOptions options_;
  int fd_ = -1;
  int error_ = 0;  // the first write's error
};

// The whole of `text` as the file at `path`, as above; AtomicFileError on failure.
void write_file_atomically(const std::string& path, const std::string& text, AtomicFileOptions options = {});

}  // namespace amp::detail
