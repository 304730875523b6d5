#include "amp/detail/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

namespace amp::detail {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ".<name>.tmp.<pid>.<call>.<salt>" in the target's folder; the name is cut so the whole stays under
// NAME_MAX (255 bytes).
std::string temp_name(const std::string& path) {
  static std::atomic<uint64_t> calls{0};
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const uint64_t salt = (now ^ (now >> 29) ^ reinterpret_cast<uintptr_t>(&now)) % 1000000007u;
  const std::string dir = folder_of(path), suffix = ".tmp." + std::to_string(::getpid()) + "." +
                                                    std::to_string(calls++) + "." + std::to_string(salt);
  return (dir == "/" ? "" : dir) + "/." + name_of(path).substr(0, 180) + suffix;
}

void sync_folder(const std::string& path) {
  if (const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);  // refused by some file systems: the file is in place all the same
    ::close(dir);
  }
}

// The temporary file linked in under `target` only when nothing is there.
int link_without_replacing(const std::string& temp, const std::string& target) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
  if (::link(temp.c_str(), target.c_str()) != 0) return errno;
  ::unlink(temp.c_str());
  return 0;
}

// 0 when `path` may be replaced: nothing is there, a regular file or a symlink (the link itself is
// replaced, what it names is left alone). ENOTSUP for anything else (a device node, a FIFO, a socket): a
// rename would put a plain file in its place, and /dev/full or a pipe someone reads would be gone. EISDIR
// for a folder.
int replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;  // missing (or unreachable: the rename will say why)
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return 0;
  return S_ISDIR(st.st_mode) ? EISDIR : ENOTSUP;
}

}  // namespace

AtomicFileError::AtomicFileError(const std::string& path, int error)
    : std::runtime_error("cannot write " + path + ": " + std::system_category().message(error)),
      path_(path),
      error_(error) {}

AtomicFile::AtomicFile(std::string path, AtomicFileOptions options)
    : path_(std::move(path)), options_(options) {
  if (name_of(path_).empty()) throw AtomicFileError(path_, path_.empty() ? ENOENT : EISDIR);
  if (options_.replace == Replace::Yes)  // said before anything is written, and checked again at commit()
    if (const int e = replaceable(path_); e != 0) throw AtomicFileError(path_, e);
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = temp_name(path_);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, options_.mode);
    if (fd_ < 0 && (errno != EEXIST || attempt >= 100)) {
      const int e = errno;
      temp_.clear();
      throw AtomicFileError(path_, e);
    }
  }
  struct stat st {};
  if (options_.replace == Replace::Yes && ::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    ::fchmod(fd_, st.st_mode & 0777);  // the file replaced keeps its permissions, where the system allows
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

bool AtomicFile::write(const void* data, size_t size) noexcept {
  const char* p = static_cast<const char*>(data);
  while (size > 0 && error_ == 0) {
    if (fd_ < 0) {
      error_ = EBADF;  // written after commit()
      break;
    }
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;  // no progress on a regular file: never loop on it
      break;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return error_ == 0;
}

void AtomicFile::fail(int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  throw AtomicFileError(path_, error);
}

void AtomicFile::commit() {
  if (fd_ < 0) fail(EBADF);  // committed already, or failed
  if (error_ != 0) fail(error_);
  if (::fsync(fd_) != 0) fail(errno);  // a full disk may only show here (delayed allocation, NFS)
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);
  if (options_.replace == Replace::Yes) {
    if (const int e = replaceable(path_); e != 0) fail(e);
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail(errno);
  } else if (const int e = link_without_replacing(temp_, path_); e != 0) {
    fail(e);
  }
  temp_.clear();
  sync_folder(path_);
}

void write_file_atomically(const std::string& path, const std::string& text, AtomicFileOptions options) {
  AtomicFile file(path, options);
  file.write(text);
  file.commit();
}

}  // namespace amp::detail
