// Folders a test makes for what it runs: a fresh private one, and one on a disk that is already full.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace test_support {

// A fresh folder under the temporary directory (`stem` + a unique suffix), removed with its contents at the
// end.
struct Folder {
  std::filesystem::path path;
  explicit Folder(const std::string& stem);
  ~Folder();
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  std::vector<std::string> entries() const;  // the names in it, in no particular order
};

// A folder on its own 8 KB tmpfs: a disk that is full once a checkpoint is written to it. Mounting needs
// CAP_SYS_ADMIN (root here); why_not says why there is none.
struct FullDisk {
  Folder folder{"amp_lab_test_tmpfs"};
  bool mounted = false;
  std::string why_not;
  FullDisk();
  ~FullDisk();
};

}  // namespace test_support
