// A folder of the test's own under the system's temporary folder, removed with all it holds when the test
// ends (made writable first: a test may take its permissions away).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <doctest/doctest.h>

namespace test_support {

struct TempFolder {
  std::filesystem::path path;
  // `prefix` names the test in the folder's name (amp_lab_<prefix>_XXXXXX), for whoever finds one left over.
  explicit TempFolder(const std::string& prefix) {
    std::string name = (std::filesystem::temp_directory_path() / ("amp_lab_" + prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(name.data()) != nullptr);
    path = name;
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                 ec);
    std::filesystem::remove_all(path, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace test_support
