#include "runner/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "amp/detail/atomic_file.h"
#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/data_files.h"
#include "runner/interrupt.h"

namespace runner {
namespace {

[[noreturn]] void refuse(const std::string& path, const char* why) {
  throw lab::UsageError(fmt::format("--json: cannot write {}: {}", lab::quote(path), why));
}

}  // namespace

JsonFile::JsonFile(const std::string& path, const std::vector<Input>& inputs) : path_(path), target_(path) {
  // Not one of the files amp-lab reads, nor '' or the next flag: said before the first lab runs.
  check_output_path("--json", path, inputs);
  struct stat st{};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    if (S_ISDIR(st.st_mode)) refuse(path, "it is a directory");
    if (!S_ISREG(st.st_mode)) {  // /dev/stdout, /dev/null, a FIFO: written in place (nothing to rename)
      // O_NONBLOCK: a FIFO without a reader is refused instead of waiting forever.
      fd_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd_ < 0) refuse(path, std::strerror(errno));
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
      return;
    }
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real)) target_ = real;  // a symlink's target is replaced, not the link
  }
  try {
    file_.emplace(target_);  // its twin beside it: amp::detail::AtomicFile
  } catch (const amp::detail::AtomicFileError& e) {
    refuse(path, e.code().message().c_str());
  }
  set_remove_on_abort(file_->temp_path().c_str());
}

JsonFile::~JsonFile() {
  if (fd_ >= 0) ::close(fd_);
  if (file_) set_remove_on_abort(nullptr);  // before the temporary file's path goes
}

void JsonFile::commit(const std::string& text) {
  auto fail = [&](int e) {
    throw lab::OutputError(fmt::format("--json: writing {} failed: {}", lab::quote(path_), std::strerror(e)));
  };
  if (file_) {
    try {
      file_->write(text);
      file_->commit();
    } catch (const amp::detail::AtomicFileError& e) {
      set_remove_on_abort(nullptr);
      fail(e.code().value());
    }
    set_remove_on_abort(nullptr);
    return;
  }
  for (size_t done = 0; done < text.size();) {  // a device or a FIFO, written in place
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);
}

}  // namespace runner
