// The one atomic write (src/amp/detail/atomic_file.h): no LibTorch. A failure, a crash and a second
// writer each leave the target whole, and no temporary file is left behind but by a crash.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "amp/detail/atomic_file.h"
#include "support/temp_folder.h"

namespace {

namespace fs = std::filesystem;
using amp::detail::AtomicFile;
using amp::detail::AtomicFileError;
using amp::detail::Replace;
using amp::detail::write_file_atomically;

struct Folder : test_support::TempFolder {
  Folder() : TempFolder("atomic") {}
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Runs `body` in a child process and returns its wait status: for what must not happen in the test's own
// process (a file-size limit, a crash).
template <class F>
int in_child(F body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("a new file: the whole text, mode 0666 less the umask, and nothing else left in the folder") {
  Folder dir;
  const std::string f = dir.file("walk.json");
  const mode_t mask = ::umask(022);
  write_file_atomically(f, "{\"a\": 1}\n");
  write_file_atomically(dir.file("private"), "x", {.mode = 0600});
  ::umask(mask);
  CHECK(slurp(f) == "{\"a\": 1}\n");
  CHECK(mode_of(f) == 0644);
  CHECK(mode_of(dir.file("private")) == 0600);
  CHECK(dir.entries() == std::vector<std::string>{"private", "walk.json"});
}

TEST_CASE("an existing file is replaced whole, by a new file that keeps its permissions") {
  Folder dir;
  const std::string f = dir.file("progress.json"), link = dir.file("old-name");
  put(f, std::string(100000, 'o'));
  ::chmod(f.c_str(), 0640);
  REQUIRE(::link(f.c_str(), link.c_str()) == 0);  // a second name for the old file
  write_file_atomically(f, "new");
  CHECK(slurp(f) == "new");
  CHECK(mode_of(f) == 0640);
  CHECK(slurp(link) == std::string(100000, 'o'));  // not rewritten in place: the old file is untouched
  CHECK(dir.entries() == std::vector<std::string>{"old-name", "progress.json"});
}

TEST_CASE("a symlink at the target is replaced, and the file it pointed to left alone") {
  Folder dir;
  const std::string victim = dir.file("precious"), f = dir.file("ckpt.pt");
  put(victim, "precious");
  fs::create_symlink(victim, f);
  write_file_atomically(f, "checkpoint");
  CHECK(slurp(victim) == "precious");
  CHECK_FALSE(fs::is_symlink(fs::symlink_status(f)));
  CHECK(slurp(f) == "checkpoint");
}

TEST_CASE("a failed rename leaves no temporary file and says which path and why, in one line") {
  Folder dir;
  const std::string f = dir.file("busy");
  fs::create_directories(fs::path(f) / "inside");  // a folder that is not empty cannot be renamed over
  try {
    write_file_atomically(f, "text");
    FAIL("no error");
  } catch (const AtomicFileError& e) {
    CHECK(e.path() == f);
    CHECK(e.code().value() == EISDIR);
    CHECK(std::string(e.what()) == "cannot write " + f + ": Is a directory");
  }
  CHECK(dir.entries() == std::vector<std::string>{"busy"});
  CHECK(fs::is_directory(fs::path(f) / "inside"));
}

TEST_CASE("a folder that is not there: the error names the target, and nothing is made") {
  Folder dir;
  const std::string f = dir.file("none/walk.json");
  try {
    AtomicFile file(f);
    FAIL("no error");
  } catch (const AtomicFileError& e) {
    CHECK(std::string(e.what()) == "cannot write " + f + ": No such file or directory");
  }
  CHECK(dir.entries().empty());
}

TEST_CASE("a write that fails (a file-size limit) keeps the old file and leaves no temporary file") {
  Folder dir;
  const std::string f = dir.file("ckpt.pt");
  put(f, "old");
  const int status = in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead of killing the process
    const rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &small);
    try {
      AtomicFile file(f);
      // Every write after the first error is skipped, and commit() raises that error.
      if (file.write(std::string(8192, 'n')) || file.write("more")) ::_exit(3);
      file.commit();
      ::_exit(1);
    } catch (const AtomicFileError& e) {
      ::_exit(e.code().value() == EFBIG ? 0 : 2);
    }
  });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(f) == "old");
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.pt"});
}

TEST_CASE("a file abandoned before commit() is removed, and the target is as it was") {
  Folder dir;
  const std::string f = dir.file("walk.json");
  put(f, "old");
  {
    AtomicFile file(f);
    file.write("new, never committed");
    CHECK(fs::exists(file.temp_path()));
    CHECK(fs::path(file.temp_path()).parent_path() == dir.path);  // beside the target: the same file system
    CHECK(fs::path(file.temp_path()).filename().string().rfind(".walk.json.tmp.", 0) == 0);  // hidden
  }
  CHECK(slurp(f) == "old");
  CHECK(dir.entries() == std::vector<std::string>{"walk.json"});
}

TEST_CASE("a crash before the rename leaves the old file whole (the hidden temporary file may stay)") {
  Folder dir;
  const std::string f = dir.file("progress.json");
  put(f, "old");
  const int status = in_child([&] {
    AtomicFile file(f);
    file.write(std::string(1 << 20, 'n'));
    ::kill(::getpid(), SIGKILL);  // no destructor, no commit
  });
  CHECK(WIFSIGNALED(status));
  CHECK(slurp(f) == "old");
  const auto names = dir.entries();
  CHECK(std::count(names.begin(), names.end(), "progress.json") == 1);
  for (const auto& n : names) CHECK((n == "progress.json" || n.rfind(".progress.json.tmp.", 0) == 0));
}

TEST_CASE("two writers at once: each has a temporary file of its own, and the target is one of them whole") {
  Folder dir;
  const std::string f = dir.file("walk.json");
  put(f, "old");  // a fixed "walk.json.tmp" there is no obstacle: the names are unique, made with O_EXCL
  put(dir.file("walk.json.tmp"), "planted");
  AtomicFile a(f), b(f);
  CHECK(a.temp_path() != b.temp_path());
  a.write(std::string(50000, 'a'));
  b.write(std::string(70000, 'b'));
  b.commit();
  a.commit();
  CHECK(slurp(f) == std::string(50000, 'a'));
  CHECK(slurp(dir.file("walk.json.tmp")) == "planted");
  CHECK(dir.entries() == std::vector<std::string>{"walk.json", "walk.json.tmp"});
}

TEST_CASE("many threads writing the same file: a reader only ever sees one whole version") {
  Folder dir;
  const std::string f = dir.file("progress.json");
  write_file_atomically(f, std::string(20000, '0'));
  std::vector<std::thread> writers;
  for (char c = '1'; c <= '4'; ++c)
    writers.emplace_back([&, c] {
      for (int i = 0; i < 25; ++i) write_file_atomically(f, std::string(20000, c));
    });
  int torn = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string seen = slurp(f);
    if (seen.size() != 20000 || seen.find_first_not_of(seen[0]) != std::string::npos) ++torn;
  }
  for (auto& w : writers) w.join();
  CHECK(torn == 0);
  CHECK(dir.entries() == std::vector<std::string>{"progress.json"});
}

TEST_CASE("Replace::No creates a file only where nothing is, and never touches what is there") {
  Folder dir;
  const std::string f = dir.file("09_gradient_accumulation.cpp");
  write_file_atomically(f, "starter", {.replace = Replace::No});
  CHECK(slurp(f) == "starter");
  put(f, "the learner's work");
  try {
    write_file_atomically(f, "starter", {.replace = Replace::No});
    FAIL("no error");
  } catch (const AtomicFileError& e) {
    CHECK(e.code().value() == EEXIST);
  }
  CHECK(slurp(f) == "the learner's work");
  // A dangling symlink is something there too: not followed, not replaced.
  const std::string link = dir.file("link.cpp");
  fs::create_symlink(dir.file("nowhere"), link);
  CHECK_THROWS_AS(write_file_atomically(link, "starter", {.replace = Replace::No}), AtomicFileError);
  CHECK_FALSE(fs::exists(dir.file("nowhere")));
  CHECK(dir.entries() == std::vector<std::string>{"09_gradient_accumulation.cpp", "link.cpp"});
}

TEST_CASE("a path with no file name is refused before anything is made") {
  Folder dir;
  CHECK_THROWS_AS(AtomicFile(dir.path.string() + "/"), AtomicFileError);
  CHECK_THROWS_AS(AtomicFile(""), AtomicFileError);
  CHECK(dir.entries().empty());
}

TEST_CASE("commit() twice, or a write after it, is an error, and the file stays as committed") {
  Folder dir;
  const std::string f = dir.file("once");
  AtomicFile file(f);
  file.write("first");
  file.commit();
  CHECK(file.temp_path().empty());
  CHECK_FALSE(file.write("second"));
  CHECK_THROWS_AS(file.commit(), AtomicFileError);
  CHECK(slurp(f) == "first");
}

TEST_CASE("a FIFO, a socket or a device node at the target is refused, left as it was, nothing made") {
  Folder dir;
  std::vector<std::string> specials{dir.file("fifo")};
  REQUIRE(::mkfifo(specials.back().c_str(), 0600) == 0);
  const std::string socket_path = dir.file("socket");
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(sock >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(socket_path.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, socket_path.c_str());
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  specials.push_back(socket_path);
  // A fake node of its own (the numbers of /dev/full), made only where this test may: never a real one.
  if (::geteuid() == 0 && ::mknod(dir.file("full").c_str(), S_IFCHR | 0600, ::makedev(1, 7)) == 0)
    specials.push_back(dir.file("full"));
  else
    MESSAGE("not root: no fake device node, the FIFO and the socket only");
  for (const std::string& f : specials) {
    CAPTURE(f);
    struct stat before {};
    REQUIRE(::lstat(f.c_str(), &before) == 0);
    try {
      write_file_atomically(f, "report");
      FAIL("replaced");
    } catch (const AtomicFileError& e) {
      CHECK(e.path() == f);
      CHECK(e.code().value() == ENOTSUP);
    }
    struct stat after {};
    REQUIRE(::lstat(f.c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK((after.st_mode & S_IFMT) == (before.st_mode & S_IFMT));
  }
  // One put there between the constructor and commit() is refused too.
  const std::string late = dir.file("late");
  AtomicFile file(late);
  file.write("report");
  REQUIRE(::mkfifo(late.c_str(), 0600) == 0);
  CHECK_THROWS_AS(file.commit(), AtomicFileError);
  struct stat st {};
  CHECK((::lstat(late.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
  ::close(sock);
  std::vector<std::string> names{"fifo", "late", "socket"};
  if (specials.size() == 3) names.insert(names.begin() + 1, "full");
  CHECK(dir.entries() == names);
}
