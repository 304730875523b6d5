// The learner's saved progress (src/runner/progress.h): answers recorded and read back, where a walk
// resumes and what it retries, and every way the file can be wrong or unwritable: a warning of one line,
// the file set aside and never lost, never a crash or a hang, and two processes saving at once both kept.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/text.h"
#include "runner/progress.h"
#include "runner/quiz.h"
#include "runner/quiz_order.h"

namespace fs = std::filesystem;

namespace {

// A folder of its own for each test, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("amp_lab_progress_" + std::to_string(::getpid()) + "_" + std::to_string(++counter));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir, ec);
  }
  fs::path state() const { return dir / "amp-lab"; }
};

struct Warnings {
  std::vector<std::string> lines;
  runner::ProgressStore::Warn sink() {
    return [this](const std::string& m) { lines.push_back(m); };
  }
  std::string all() const {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// {"a": {"a": ... 1 ...}}, `depth` objects deep: well-formed JSON.
std::string nested_objects(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "{\"a\": ";
  return text + "1" + std::string(static_cast<size_t>(depth), '}');
}

// The files set aside beside progress.json.
std::vector<fs::path> set_aside(const fs::path& state) {
  std::vector<fs::path> out;
  if (!fs::exists(state)) return out;
  for (const auto& e : fs::directory_iterator(state))
    if (e.path().filename().string().rfind("progress.json.set-aside-", 0) == 0) out.push_back(e.path());
  return out;
}

// Three questions in two tracks, as parse_quiz reads them.
runner::Quiz quiz() {
  const auto labs = [](const std::string&) -> std::optional<runner::LabRef> {
    return runner::LabRef{1, "01_l"};
  };
  std::string text =
      "title: T\ntracks:\n  - id: core\n    title: Core\n  - id: extra\n    title: Extra\nquestions:\n";
  for (const char* q : {"q1", "q2", "q3", "q4"}) {
    text += std::string("  - id: ") + q +
            "\n    lab: l\n    prompt: P?\n    options: [A, B, C, D]\n"
            "    answer: b\n    hint: a hint\n    explanation: because\n";
    if (std::string(q) == "q4") text += "    track: extra\n";
  }
  return runner::parse_quiz(text, "test.yaml", labs);
}

// Runs `body` in a child process as an unprivileged user (nobody, when this test runs as root, who may
// read and write anything) and returns what it wrote to its pipe. `dir` is handed to that user first.
std::string as_unprivileged(const fs::path& dir, const std::function<std::string()>& body) {
  if (::geteuid() == 0) {
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    for (const auto& e : fs::recursive_directory_iterator(dir))
      REQUIRE(::lchown(e.path().c_str(), 65534, 65534) == 0);
  }
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(2);
    const std::string out = body();
    [[maybe_unused]] const ssize_t n = ::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                  "the unprivileged child failed: " << status);
  return out;
}

}  // namespace

TEST_CASE("the progress folder is XDG_STATE_HOME's amp-lab, else ~/.local/state/amp-lab") {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const std::string kept_xdg = xdg ? xdg : "";
  const char* home = std::getenv("HOME");
  const std::optional<std::string> kept_home = home ? std::optional<std::string>(home) : std::nullopt;
  ::setenv("XDG_STATE_HOME", "/var/state-test", 1);
  CHECK(runner::default_state_dir() == fs::path("/var/state-test/amp-lab"));
  ::setenv("XDG_STATE_HOME", "relative/state", 1);  // the XDG spec ignores a relative path
  ::setenv("HOME", "/home/learner", 1);
  CHECK(runner::default_state_dir() == fs::path("/home/learner/.local/state/amp-lab"));
  ::unsetenv("XDG_STATE_HOME");
  CHECK(runner::default_state_dir() == fs::path("/home/learner/.local/state/amp-lab"));
  if (xdg) ::setenv("XDG_STATE_HOME", kept_xdg.c_str(), 1);
  if (kept_home)
    ::setenv("HOME", kept_home->c_str(), 1);
  else
    ::unsetenv("HOME");
}

TEST_CASE("answers are recorded per track and read back, attempts counted, the file one JSON of version 2") {
  Scratch s;
  Warnings w;
  runner::ProgressStore store(s.state(), w.sink());
  CHECK(store.load().quiz.empty());  // no file yet: nothing, and no warning
  const runner::Quiz q = quiz();
  CHECK(store.record(q.questions[0], runner::Outcome::Right, 'b', 0));
  CHECK(store.record(q.questions[1], runner::Outcome::Wrong, 'a', 2));
  CHECK(store.record(q.questions[3], runner::Outcome::Skipped, 'c', 1));
  CHECK(store.record(q.questions[1], runner::Outcome::Right, 'b', 0));  // the same question again
  CHECK(w.lines.empty());

  const runner::Progress p = store.load();
  REQUIRE(p.quiz.count("core"));
  REQUIRE(p.quiz.count("extra"));
  const auto& core = p.quiz.at("core");
  CHECK(core.at(1).id == "q1");
  CHECK(core.at(1).outcome == runner::Outcome::Right);
  CHECK(core.at(1).answer == 'b');
  CHECK(core.at(2).outcome == runner::Outcome::Right);  // the latest answer
  CHECK(core.at(2).attempts == 2);
  CHECK(core.at(2).hints == 0);
  CHECK(p.quiz.at("extra").at(4).outcome == runner::Outcome::Skipped);
  CHECK(p.quiz.at("extra").at(4).answer == 0);  // a skip chose nothing
  CHECK(p.quiz.at("extra").at(4).hints == 1);
  CHECK(core.at(1).at.size() == 20);  // "2026-11-30T08:03:12Z"

  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["version"] == 2);
  CHECK(j["quiz"]["core"]["questions"]["2"]["attempts"].size() == 2);
  CHECK(j["quiz"]["core"]["questions"]["2"]["attempts"][0]["outcome"] == "wrong");  // the first kept
  CHECK(j["quiz"]["core"]["questions"]["2"]["attempts"][1]["outcome"] == "right");
  CHECK(j["exercises"].is_object());
  // The folder is the learner's own.
  CHECK((fs::status(s.state()).permissions() & fs::perms::all) == fs::perms::owner_all);
}

TEST_CASE("saving keeps the exercises and any other top-level key as it found them") {
  Scratch s;
  Warnings w;
  put(s.state() / "progress.json",
      R"({"version": 1, "quiz": {}, "exercises": {"06": {"status": "done", "at": "2026-11-30T09:00:00Z"}},
          "later": [1, 2]})");
  runner::ProgressStore store(s.state(), w.sink());
  REQUIRE(store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""}));
  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["exercises"]["06"]["status"] == "done");
  CHECK(j["later"] == nlohmann::json::array({1, 2}));
  CHECK(store.reset());  // the quiz only
  const auto after = nlohmann::json::parse(slurp(store.file()));
  CHECK(after["quiz"].empty());
  CHECK(after["exercises"]["06"]["status"] == "done");
  CHECK(w.lines.empty());
}

TEST_CASE("an exercise entry amp-lab does not write is set aside with one warning, the others kept") {
  Scratch s;
  Warnings w;
  put(s.state() / "progress.json",
      R"({"version": 1, "quiz": {}, "exercises": {"02": {"status": "started", "checks_run": 2},
          "06": {"status": 7}, "09": {"checks_run": "two"}, "10": [1], "11": {"solution": "yes"},
          "12": {"last": 3}, "13": {"hints": -1}}})");
  runner::ProgressStore store(s.state(), w.sink());
  const runner::Progress p = store.load();
  CHECK(p.exercises.size() == 1);
  CHECK(p.exercises["02"]["checks_run"] == 2);
  REQUIRE(p.set_aside.size() == 6);  // each naming what is wrong with it
  CHECK(p.set_aside[0] == "the entry of exercise '06' (status is not \"started\" or \"done\")");
  CHECK(p.set_aside[1].find("checks_run is not a count") != std::string::npos);
  CHECK(p.set_aside[2].find("not an object") != std::string::npos);
  CHECK(p.set_aside[3].find("solution is not true or false") != std::string::npos);
  CHECK(p.set_aside[4].find("last is not a string") != std::string::npos);
  CHECK(p.set_aside[5].find("hints is not a count") != std::string::npos);
  REQUIRE(w.lines.size() == 1);  // one line for them all, naming the first
  CHECK(w.lines[0].find("6 exercise entries set aside, see \"exercises_set_aside\" there; the first: the "
                        "entry of exercise '06' (status is not \"started\" or \"done\")") !=
        std::string::npos);
  REQUIRE(store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""}));
  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["exercises"].size() == 1);
  CHECK(j["exercises_set_aside"]["06"]["status"] == 7);  // kept in the file, out of the exercises' way
  CHECK(j["exercises_set_aside"].size() == 6);
  w.lines.clear();
  store.load();
  CHECK(w.lines.empty());  // said once: after a save, nothing is left to set aside
}

TEST_CASE(
    "an entry set aside joins those set aside before, and a value there that is not an object is kept") {
  Scratch s;
  Warnings w;
  put(s.state() / "progress.json",
      R"j({"version": 2, "quiz": {}, "exercises": {"06": {"status": 7}, "07": [2]},
          "exercises_set_aside": {"06": {"status": "kept"}, "06 (2)": {"hints": "kept too"}}})j");
  runner::ProgressStore store(s.state(), w.sink());
  REQUIRE(store.reset());
  auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["exercises_set_aside"]["06"]["status"] == "kept");  // set aside before: never replaced
  CHECK(j["exercises_set_aside"]["06 (2)"]["hints"] == "kept too");
  CHECK(j["exercises_set_aside"]["06 (3)"]["status"] == 7);  // the new one beside them
  CHECK(j["exercises_set_aside"]["07"] == nlohmann::json::array({2}));
  CHECK(j["exercises"].empty());
  // A value that is not an object where the set-aside entries go: moved to a key of its own, whole.
  put(store.file(), R"({"version": 2, "quiz": {}, "exercises": {"06": {"status": 7}},
                        "exercises_set_aside": "a note", "exercises_set_aside_kept": [1]})");
  REQUIRE(store.reset());
  j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["exercises_set_aside"] == nlohmann::json({{"06", {{"status", 7}}}}));
  CHECK(j["exercises_set_aside_kept"] == nlohmann::json::array({1}));
  CHECK(j["exercises_set_aside_kept (2)"] == "a note");
}

TEST_CASE("60,000 exercise entries set aside are warned of in one line, and all of them kept") {
  Scratch s;
  Warnings w;
  nlohmann::json file = {
      {"version", 2}, {"quiz", nlohmann::json::object()}, {"exercises", nlohmann::json::object()}};
  for (int i = 0; i < 60'000; ++i) file["exercises"][std::to_string(i)] = {{"status", i}};
  put(s.state() / "progress.json", file.dump());
  runner::ProgressStore store(s.state(), w.sink());
  CHECK(store.load().set_aside.size() == 60'000);
  REQUIRE(w.lines.size() == 1);
  CHECK(w.lines[0].find("60000 exercise entries set aside") != std::string::npos);
  REQUIRE(store.reset());
  CHECK(nlohmann::json::parse(slurp(store.file()))["exercises_set_aside"].size() == 60'000);
}

TEST_CASE("a version-1 file's learner that is not an object is kept beside one kept before") {
  Scratch s;
  put(s.state() / "progress.json",
      R"({"version": 1, "quiz": {}, "learner": "v1 note", "learner_kept": "kept before"})");
  runner::ProgressStore store(s.state(), [](const std::string&) {});
  REQUIRE(store.record(quiz().questions[0], runner::Attempt{runner::Outcome::Right, 'b'}, 7));
  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["learner"]["order_seed"] == 7);
  CHECK(j["learner_kept"] == "kept before");
  CHECK(j["learner_kept (2)"] == "v1 note");
}

TEST_CASE("a walk resumes at the questions not yet answered and retries the missed and skipped ones") {
  Scratch s;
  runner::ProgressStore store(s.state(), [](const std::string&) {});
  const runner::Quiz full = quiz();
  const runner::Quiz core = runner::select_track(full, "core");
  CHECK(runner::resume_questions(store.load(), core) == std::vector<int>{1, 2, 3});
  store.record(full.questions[0], runner::Outcome::Wrong, 'a', 0);
  store.record(full.questions[1], runner::Outcome::Skipped, 0, 0);
  const runner::Progress p = store.load();
  CHECK(runner::resume_questions(p, core) == std::vector<int>{3});
  CHECK(runner::retry_questions(p, core) == std::vector<int>{1, 2});
  CHECK(runner::resume_questions(p, full) == std::vector<int>{3, 4});  // --track all: every track's
  CHECK(runner::only_command(full, "core", {1, 2}) == "amp-lab quiz --only 1,2");
  CHECK(runner::only_command(full, "extra", {4}) == "amp-lab quiz --track extra --only 4");
  CHECK(runner::only_command(full, "all", {2, 4}) == "amp-lab quiz --track all --only 2,4");
  CHECK(runner::only_command(full, "core", {}).empty());
  // A quiz.yaml whose question 1 is now another question: its old answer is not taken for the new one.
  runner::Quiz renumbered = core;
  renumbered.questions[0].id = "a-new-question";
  CHECK(runner::resume_questions(p, renumbered) == std::vector<int>{1, 3});
  CHECK(runner::retry_questions(p, renumbered) == std::vector<int>{2});
  // Reset of one track leaves the others.
  store.record(full.questions[3], runner::Outcome::Right, 'b', 0);
  CHECK(store.reset("core"));
  CHECK(runner::resume_questions(store.load(), full) == std::vector<int>{1, 2, 3});
}

TEST_CASE("a file that is not amp-lab's progress is set aside with one warning, and saving starts afresh") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not JSON", "{\"version\": 1, \"quiz\": {"},
      {"no version and quiz", R"({"theme": "dark"})"},
      {"version", R"({"version": 3, "quiz": {}})"},  // a later amp-lab's: not ours to rewrite
      {"attempts", R"({"version": 2, "quiz": {"core": {"questions": {"1": {"id": "q1", "attempts": []}}}}})"},
      {"order_seed", R"({"version": 2, "learner": {"order_seed": -4}, "quiz": {}})"},
      {"question number", R"({"version": 1, "quiz": {"core": {"questions": {"x": {}}}}})"},
      {"outcome or answer", R"({"version": 1, "quiz": {"core": {"questions": {"1":
          {"id": "q1", "outcome": "maybe", "hints": 0, "at": "t"}}}}})"},
      {"nested more than 32 levels deep", std::string(1'000'000, '[')},  // no stack overflow
      // Well-formed but deep, in a key kept as found: copying it overflowed the stack (SIGSEGV).
      {"nested more than 32 levels deep",
       R"({"version": 1, "quiz": {}, "theme": )" + std::string(50'000, '[') + std::string(50'000, ']') + "}"},
      {"nested more than 32 levels deep",
       R"({"version": 1, "quiz": {}, "exercises": {"x": )" + nested_objects(50'000) + "}}"},
      {"larger than", std::string(5 << 20, ' ')},
  };
  for (const auto& [reason, text] : cases) {
    CAPTURE(reason);
    Scratch s;
    Warnings w;
    put(s.state() / "progress.json", text);
    runner::ProgressStore store(s.state(), w.sink());
    CHECK(store.load().quiz.empty());
    REQUIRE(w.lines.size() == 1);
    CHECK(w.lines[0].find(store.file().string()) != std::string::npos);
    CHECK(w.lines[0].find(reason) != std::string::npos);
    CHECK(w.lines[0].find("set aside as progress.json.set-aside-") != std::string::npos);
    CHECK(w.lines[0].find('\n') == std::string::npos);
    const auto aside = set_aside(s.state());
    REQUIRE(aside.size() == 1);
    CHECK(slurp(aside[0]) == text);  // never lost
    CHECK_FALSE(fs::exists(store.file()));
    CHECK(store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""}));
    CHECK(store.load().quiz.at("core").at(1).id == "q1");
    CHECK(w.lines.size() == 1);
  }
}

TEST_CASE("a directory, a FIFO or a symbolic link where the file should be is set aside, without blocking") {
  for (const std::string kind : {"directory", "fifo", "symlink"}) {
    CAPTURE(kind);
    Scratch s;
    Warnings w;
    fs::create_directories(s.state());
    const fs::path file = s.state() / "progress.json";
    if (kind == "directory") fs::create_directories(file / "inside");
    if (kind == "fifo") REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
    if (kind == "symlink") {
      put(s.dir / "elsewhere.json", R"({"version": 1, "quiz": {}})");
      fs::create_symlink(s.dir / "elsewhere.json", file);
    }
    runner::ProgressStore store(s.state(), w.sink());
    const auto start = std::chrono::steady_clock::now();
    CHECK(store.record("core", 1, {"q1", runner::Outcome::Wrong, 'a', 0, 1, ""}));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    REQUIRE(w.lines.size() == 1);
    CHECK(w.lines[0].find("set aside") != std::string::npos);
    CHECK(set_aside(s.state()).size() == 1);
    CHECK(fs::is_regular_file(fs::symlink_status(file)));
    if (kind == "symlink") CHECK(slurp(s.dir / "elsewhere.json") == R"({"version": 1, "quiz": {}})");
  }
}

TEST_CASE("an unreadable file is set aside, and one that cannot be set aside is kept with nothing saved") {
  Scratch s;
  put(s.state() / "progress.json", R"({"version": 1, "quiz": {}})");
  const std::string unreadable = as_unprivileged(s.dir, [&] {
    ::chmod((s.state() / "progress.json").c_str(), 0);
    Warnings w;
    runner::ProgressStore store(s.state(), w.sink());
    const bool saved = store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""});
    return std::string(saved ? "saved" : "not saved") + "\n" + w.all();
  });
  CHECK(unreadable.rfind("saved\n", 0) == 0);
  CHECK(unreadable.find("unreadable: Permission denied") != std::string::npos);
  CHECK(unreadable.find("set aside as") != std::string::npos);

  Scratch t;
  put(t.state() / "progress.json", "not json at all");
  const std::string kept = as_unprivileged(t.dir, [&] {
    std::string out;
    for (const bool lock_file : {false, true}) {
      // With the folder read-only there is no rename and no new file: no lock file either, unless an
      // earlier run left one.
      if (lock_file) {
        ::chmod(t.state().c_str(), 0700);
        ::close(::open((t.state() / "progress.json.lock").c_str(), O_RDWR | O_CREAT, 0600));
      }
      ::chmod(t.state().c_str(), 0500);
      Warnings w;
      runner::ProgressStore store(t.state(), w.sink());
      const bool saved = store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""});
      store.record("core", 2, {"q2", runner::Outcome::Right, 'b', 0, 1, ""});
      out += std::string(saved ? "saved" : "not saved") + "\n" + w.all();
    }
    return out;
  });
  INFO(kept);
  CHECK(count(kept, "not saved\n") == 2);  // neither time
  CHECK(count("\n" + kept, "\nsaved\n") == 0);
  CHECK(count(kept, "\n") == 4);  // a warning of one line each time, though each tried twice
  CHECK(kept.find("cannot save progress: cannot lock") != std::string::npos);
  CHECK(kept.find("(not JSON) and cannot be set aside (Permission denied); progress will not be saved") !=
        std::string::npos);
  CHECK(slurp(t.state() / "progress.json") == "not json at all");  // kept as it was
  CHECK(set_aside(t.state()).empty());
}

TEST_CASE("an unwritable progress folder warns once and the walk goes on unsaved") {
  Scratch s;
  put(s.dir / "amp-lab", "a file where the folder should be");
  Warnings w;
  runner::ProgressStore store(s.state(), w.sink());
  CHECK_FALSE(store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""}));
  CHECK_FALSE(store.record("core", 2, {"q2", runner::Outcome::Right, 'b', 0, 1, ""}));
  REQUIRE(w.lines.size() == 1);  // once, not after every question
  CHECK(w.lines[0].find("cannot save progress") != std::string::npos);
  CHECK(store.load().quiz.empty());

  Scratch t;
  put(t.state() / "progress.json", R"({"version": 1, "quiz": {}})");
  const std::string read_only = as_unprivileged(t.dir, [&] {
    ::chmod(t.state().c_str(), 0500);
    Warnings warnings;
    runner::ProgressStore ro(t.state(), warnings.sink());
    const bool saved = ro.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""});
    return std::string(saved ? "saved" : "not saved") + "\n" + warnings.all();
  });
  INFO(read_only);
  CHECK(read_only.rfind("not saved\n", 0) == 0);
  CHECK(read_only.find("cannot") != std::string::npos);
  CHECK(slurp(t.state() / "progress.json") == R"({"version": 1, "quiz": {}})");
}

TEST_CASE("two processes saving at once both keep every answer, and the file stays one JSON") {
  Scratch s;
  constexpr int kEach = 40;
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> children;
  for (const std::string track : {"core", "extra"}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      [[maybe_unused]] const ssize_t n = ::read(go[0], &c, 1);  // both start together
      runner::ProgressStore store(s.state(), [](const std::string&) { ::_exit(3); });
      for (int i = 1; i <= kEach; ++i) {
        if (!store.record(track, i, {"q" + std::to_string(i), runner::Outcome::Right, 'b', 0, 1, ""}))
          ::_exit(4);
        if (!store.record("shared", 1, {"q1", runner::Outcome::Wrong, 'a', 0, 1, ""})) ::_exit(5);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // EOF: go
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  Warnings w;
  const runner::Progress p = runner::ProgressStore(s.state(), w.sink()).load();
  CHECK(w.lines.empty());
  CHECK(p.quiz.at("core").size() == kEach);
  CHECK(p.quiz.at("extra").size() == kEach);
  CHECK(p.quiz.at("shared").at(1).attempts == 2 * kEach);  // no save lost another's
  CHECK_NOTHROW(nlohmann::json::parse(slurp(s.state() / "progress.json")));
  // No temporary file left behind.
  for (const auto& e : fs::directory_iterator(s.state()))
    CHECK(e.path().filename().string().rfind(".progress.json.", 0) != 0);
}

TEST_CASE("a lock held elsewhere delays a save a few seconds at most, then it is given up with a warning") {
  Scratch s;
  fs::create_directories(s.state());
  const int fd = ::open((s.state() / "progress.json.lock").c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  const pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    ::flock(fd, LOCK_EX);
    ::sleep(30);
    ::_exit(0);
  }
  ::usleep(200'000);  // the child has the lock
  Warnings w;
  runner::ProgressStore store(s.state(), w.sink());
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(store.record("core", 1, {"q1", runner::Outcome::Right, 'b', 0, 1, ""}));
  const auto waited = std::chrono::steady_clock::now() - start;
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ::close(fd);
  CHECK(waited < std::chrono::seconds(10));
  REQUIRE(w.lines.size() == 1);
  CHECK(w.lines[0].find("cannot lock") != std::string::npos);
}

TEST_CASE(
    "amp-lab progress shows each track's answers, never an answer not given, and the commands to go on") {
  Scratch s;
  runner::ProgressStore store(s.state(), [](const std::string&) {});
  const runner::Quiz full = quiz();
  store.record(full.questions[0], runner::Outcome::Right, 'b', 1);
  store.record(full.questions[1], runner::Outcome::Wrong, 'c', 0);
  store.update(
      [](runner::Progress& p) { p.exercises["06"] = {{"status", "done"}, {"at", "2026-11-30T09:00:00Z"}}; });
  std::ostringstream out;
  runner::print_progress(out, store.load(), full, store.file(), 80);
  const std::string text = out.str();
  INFO(text);
  CHECK(text.find("saved in " + store.file().string()) != std::string::npos);
  CHECK(text.find("Core: 2 of 3 answered: 1 right, 1 wrong, 0 skipped; 1 hint used") != std::string::npos);
  CHECK(text.find("b (right)") != std::string::npos);
  CHECK(text.find("score: first try 1/3 right, latest 1/3 right") != std::string::npos);
  CHECK(text.find("c (wrong)") != std::string::npos);
  // Question 3 was not answered: a dash, not its answer.
  const size_t q3 = text.find("\n    3  q3");
  REQUIRE(q3 != std::string::npos);
  const std::string row = text.substr(q3 + 1, text.find('\n', q3 + 1) - q3 - 1);
  CHECK(row.back() == '-');
  CHECK(row.find(" b") == std::string::npos);
  CHECK(text.find("retry the missed and skipped: amp-lab quiz --only 2") != std::string::npos);
  CHECK(text.find("go on where you stopped: amp-lab quiz --only 3") != std::string::npos);
  CHECK(text.find("Extra: not started (1 question)") != std::string::npos);
  CHECK(text.find("06: done (2026-11-30 09:00 UTC)") != std::string::npos);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) CHECK(lab::display_width(line) <= 80);
}

TEST_CASE(
    "every attempt is kept: a walk of --track all after a practice walk adds to it, and replaces nothing") {
  Scratch s;
  runner::ProgressStore store(s.state(), [](const std::string&) {});
  const runner::Quiz full = quiz();
  const auto attempt = [](runner::Outcome outcome, char answer, char shown, const char* order, int hints,
                          const char* walk) {
    runner::Attempt a;
    a.outcome = outcome;
    a.answer = answer;
    a.shown = shown;
    a.order = order;
    a.hints = hints;
    a.seconds = 12;
    a.walk = walk;
    return a;
  };
  // The practice walk: q4 (track extra) right with one hint, shown at c in the order "dabc".
  REQUIRE(store.record(full.questions[3], attempt(runner::Outcome::Right, 'b', 'c', "dabc", 1, "extra")));
  // Then --track all, answered blind: wrong, then skipped.
  REQUIRE(store.record(full.questions[3], attempt(runner::Outcome::Wrong, 'a', 'b', "cadb", 0, "all")));
  REQUIRE(store.record(full.questions[3], attempt(runner::Outcome::Skipped, 'd', 'a', "dcba", 0, "all")));
  const runner::Progress p = store.load();
  const runner::QuestionRecord& r = p.quiz.at("extra").at(4);
  REQUIRE(r.history.size() == 3);
  CHECK(r.attempts == 3);
  REQUIRE(r.first_try() != nullptr);
  CHECK(r.first_try()->outcome == runner::Outcome::Right);
  CHECK(r.first_try()->answer == 'b');
  CHECK(r.first_try()->shown == 'c');
  CHECK(r.first_try()->order == "dabc");
  CHECK(r.first_try()->hints == 1);
  CHECK(r.first_try()->seconds == 12);
  CHECK(r.first_try()->walk == "extra");
  CHECK(r.history[1].walk == "all");
  CHECK(r.outcome == runner::Outcome::Skipped);  // the latest
  CHECK(r.history[2].answer == 0);               // a skip chose nothing, whatever was passed
  CHECK(r.history[2].shown == 0);
  // --retry asks what the latest attempt missed: q4 now, although its first try was right.
  CHECK(runner::retry_questions(p, full) == std::vector<int>{4});
  REQUIRE(store.record(full.questions[3], attempt(runner::Outcome::Right, 'b', 'd', "acdb", 0, "all")));
  CHECK(runner::retry_questions(store.load(), full).empty());
  // A prompt left open for two months: the time is kept at its cap, and the file still reads back.
  runner::Attempt slow = attempt(runner::Outcome::Wrong, 'a', 'a', "abcd", 0, "all");
  slow.seconds = 5'000'000;
  REQUIRE(store.record(full.questions[3], slow));
  CHECK(store.load().quiz.at("extra").at(4).history.back().seconds == 1'000'000);
  REQUIRE(store.record(full.questions[3], attempt(runner::Outcome::Right, 'b', 'a', "bcda", 0, "all")));
  // amp-lab progress: the first try and the latest, side by side, and the score of each.
  store.record(full.questions[0], attempt(runner::Outcome::Wrong, 'a', 'a', "abcd", 0, "core"));
  store.record(full.questions[0], attempt(runner::Outcome::Right, 'b', 'c', "dcba", 2, "core"));
  std::ostringstream out;
  runner::print_progress(out, store.load(), full, store.file(), 100);
  const std::string text = out.str();
  INFO(text);
  CHECK(text.find("score: first try 0/3 right, latest 1/3 right") != std::string::npos);
  CHECK(text.find("score: first try 1/1 right, latest 1/1 right") != std::string::npos);
  const size_t q1 = text.find("\n    1  q1");
  REQUIRE(q1 != std::string::npos);
  const std::string row = text.substr(q1 + 1, text.find('\n', q1 + 1) - q1 - 1);
  CHECK(row.find("a (wrong)") < row.find("c (right)"));  // the first try, then the latest, as shown
}

TEST_CASE("a version-1 file loads, each record its question's latest attempt, and is kept as it was") {
  Scratch s;
  Warnings w;
  const std::string v1 =
      R"({"version": 1, "quiz": {"core": {"questions": {"1": {"id": "q1", "outcome": "wrong", "answer": "a",
          "hints": 2, "attempts": 3, "at": "2026-11-30T08:03:12Z"}, "2": {"id": "q2", "outcome": "right",
          "answer": "b", "hints": 0, "at": "2026-11-30T08:04:00Z"}}}}, "exercises": {"06": {"status": "done"}},
          "theme": "dark"})";
  put(s.state() / "progress.json", v1);
  runner::ProgressStore store(s.state(), w.sink());
  const runner::Progress p = store.load();
  CHECK(p.version == 1);
  const runner::QuestionRecord& q1 = p.quiz.at("core").at(1);
  CHECK(q1.outcome == runner::Outcome::Wrong);
  CHECK(q1.answer == 'a');
  CHECK(q1.hints == 2);
  CHECK(q1.attempts == 3);           // as the file counted them
  REQUIRE(q1.history.size() == 1);   // the one it kept
  CHECK(q1.unrecorded == 2);         // the two before it, counted, their details never saved
  CHECK(q1.first_try() == nullptr);  // so its first try is not known
  CHECK(q1.history[0].at == "2026-11-30T08:03:12Z");
  const runner::QuestionRecord& q2 = p.quiz.at("core").at(2);
  REQUIRE(q2.first_try() != nullptr);  // one attempt, and no other before it: the first try
  CHECK(q2.first_try()->outcome == runner::Outcome::Right);
  CHECK(slurp(store.file()) == v1);  // loading changes nothing

  // The first save writes version 2 and keeps the version-1 file byte for byte beside it.
  REQUIRE(store.record(quiz().questions[0], runner::Outcome::Right, 'b', 0));
  CHECK(w.lines.empty());
  CHECK(slurp(s.state() / "progress.json.version-1") == v1);
  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["version"] == 2);
  CHECK(j["quiz"]["core"]["questions"]["1"]["unrecorded"] == 2);
  CHECK(j["quiz"]["core"]["questions"]["1"]["attempts"].size() == 2);
  CHECK(j["quiz"]["core"]["questions"]["1"]["attempts"][0]["answer"] == "a");
  CHECK(j["quiz"]["core"]["questions"]["2"]["attempts"][0]["outcome"] == "right");
  CHECK(j["exercises"]["06"]["status"] == "done");
  CHECK(j["theme"] == "dark");
  const runner::Progress after = store.load();
  CHECK(after.quiz.at("core").at(1).attempts == 4);
  CHECK(after.quiz.at("core").at(1).outcome == runner::Outcome::Right);
  // A later save leaves the copy as it is.
  REQUIRE(store.record(quiz().questions[1], runner::Outcome::Wrong, 'c', 0));
  CHECK(slurp(s.state() / "progress.json.version-1") == v1);
}

TEST_CASE("the learner's order seed is saved with the first answer saved, and kept by every later one") {
  Scratch s;
  runner::ProgressStore store(s.state(), [](const std::string&) {});
  const runner::Quiz full = quiz();
  const std::uint64_t seed = runner::new_learner_seed();
  CHECK(seed <= runner::kMaxLearnerSeed);
  runner::Attempt a;
  a.outcome = runner::Outcome::Right;
  a.answer = 'b';
  REQUIRE(store.record(full.questions[0], a, seed));
  CHECK(store.load().order_seed == seed);
  // A later walk's seed (one drawn before the first save was seen) does not replace it.
  REQUIRE(store.record(full.questions[1], a, seed + 1));
  REQUIRE(store.record(full.questions[2], a));  // --order-seed or --file-order: no learner's seed given
  runner::ProgressStore again(s.state(), [](const std::string&) {});
  CHECK(again.load().order_seed == seed);
  const auto j = nlohmann::json::parse(slurp(store.file()));
  CHECK(j["learner"]["order_seed"].get<std::uint64_t>() == seed);
  // Two draws for two learners differ.
  CHECK(runner::new_learner_seed() != runner::new_learner_seed());
}
