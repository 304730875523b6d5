#include "support/folder.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fs = std::filesystem;

namespace test_support {

Folder::Folder(const std::string& stem) {
  std::string tmpl = (fs::temp_directory_path() / (stem + "_XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
  path = tmpl;
}

Folder::~Folder() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::vector<std::string> Folder::entries() const {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
  return names;
}

FullDisk::FullDisk() {
  if (::mount("tmpfs", folder.path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=8k") == 0)
    mounted = true;
  else
    why_not = std::string("cannot mount a tmpfs here (") + std::strerror(errno) + ")";
}

FullDisk::~FullDisk() {
  if (mounted) ::umount2(folder.path.c_str(), MNT_DETACH);
}

}  // namespace test_support
