#include "lab/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lab {
namespace {

// Why `st` is not a file to read ("" when it is one).
std::string not_a_file(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory, not a file";
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link, not a file";
  if (S_ISFIFO(st.st_mode)) return "it is a FIFO, not a regular file";
  if (S_ISSOCK(st.st_mode)) return "it is a socket, not a regular file";
  return "it is a device, not a regular file";
}

std::string too_large(size_t max_bytes) {
  return "larger than " + std::to_string(max_bytes) + " bytes, more than such a file ever holds";
}

}  // namespace

ReadError::ReadError(const std::string& path, const std::string& why, int error)
    : std::runtime_error("cannot read " + path + ": " + why), error_(error) {}

std::string read_regular_fd(int fd, const std::string& name, const ReadOptions& o, bool* was_cut) {
  if (was_cut) *was_cut = false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ReadError(name, std::strerror(errno), errno);
  if (const std::string why = not_a_file(st); !why.empty()) throw ReadError(name, why, 0);
  if (static_cast<size_t>(st.st_size) > o.max_bytes && !o.cut)
    throw ReadError(name, too_large(o.max_bytes), 0);
  std::string text;
  char buffer[65536];
  for (off_t at = 0;;) {  // pread: from the start, whatever the descriptor's offset
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ReadError(name, std::strerror(errno), errno);
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    at += n;
    if (text.size() > o.max_bytes) {  // it grew while being read
      if (!o.cut) throw ReadError(name, too_large(o.max_bytes), 0);
      text.resize(o.max_bytes);
      if (was_cut) *was_cut = true;
      break;
    }
  }
  return text;
}

std::string read_regular_file(const std::string& path, const ReadOptions& o, bool* was_cut) {
  struct stat st {};
  if ((o.follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0)
    throw ReadError(path, std::strerror(errno), errno);
  if (const std::string why = not_a_file(st); !why.empty()) throw ReadError(path, why, 0);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (o.follow ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    const int e = errno;
    throw ReadError(path, e == ELOOP ? "it is a symbolic link, not a file" : std::strerror(e), e);
  }
  try {
    std::string text = read_regular_fd(fd, path, o, was_cut);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace lab
