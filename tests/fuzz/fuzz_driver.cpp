// A seeded mutation fuzzer with a fixed time budget, for where libFuzzer (clang) is not installed. It
// drives the same LLVMFuzzerTestOneInput entry point as libFuzzer would:
//   fuzz_quiz [--seconds S] [--runs N] [--seed X] [--max-len BYTES] [--crash-dir DIR] CORPUS_DIR_OR_FILE...
// It mutates the corpus (bit flips, byte edits, cuts, copies, splices, long repeats, dictionary tokens)
// and keeps an input that reaches a new outcome (the harness names it through amp_lab_fuzz_outcome).
// A crash, sanitizer report or hang (one input over --hang-seconds) saves the input in --crash-dir
// and ends the run with a non-zero exit; otherwise it prints one line of figures and exits 0.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fuzz_harness.h"

extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

void say(const char* text) {
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

std::string g_current;     // the input under test, saved when it crashes
std::string g_crash_path;  // where it goes
const char* g_target = "fuzz";

// Only async-signal-safe calls: this also runs from a signal handler, possibly inside malloc.
void save_current() {
  const int fd = ::open(g_crash_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  for (size_t done = 0; done < g_current.size();) {
    const ssize_t n = ::write(fd, g_current.data() + done, g_current.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  say("the input is saved in ");
  say(g_crash_path.c_str());
  say("\n");
}

void on_fatal(int signo) {
  say(g_target);
  say(signo == SIGALRM ? ": HANG: one input ran longer than --hang-seconds\n" : ": CRASH: a fatal signal\n");
  save_current();
  std::signal(SIGABRT, SIG_DFL);
  std::signal(signo, SIG_DFL);
  std::raise(signo == SIGALRM ? SIGABRT : signo);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Mutator {
 public:
  Mutator(std::uint64_t seed, size_t max_len) : rng_(seed), max_len_(max_len) {}

  size_t pick(size_t n) { return below(n); }

  std::string mutate(std::string s, const std::vector<std::string>& pool) {
    const int edits = 1 + static_cast<int>(below(6));
    for (int k = 0; k < edits; ++k) edit(s, pool);
    if (s.size() > max_len_) s.resize(max_len_);
    return s;
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  const std::string& token() {
    const auto& dict = amp_lab_fuzz_dictionary();
    static const std::string none;
    return dict.empty() ? none : dict[below(dict.size())];
  }

  void edit(std::string& s, const std::vector<std::string>& pool) {
    const size_t at = below(s.size() + 1);
    switch (below(10)) {
      case 0:  // flip one bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1:  // set one byte, often to something hostile
        if (!s.empty()) {
          static const char hostile[] = {'\0', '\n', '\r', '\x1b', '\x7f', '\xff', '\xc3',
                                         '{',  '}',  '"',  '\'',   ':',    '-',    ' '};
          s[below(s.size())] = below(2) ? hostile[below(sizeof hostile)] : static_cast<char>(below(256));
        }
        break;
      case 2:  // insert a byte
        s.insert(at, 1, static_cast<char>(below(256)));
        break;
      case 3: {  // cut a range
        const size_t n = below(std::min<size_t>(s.size() - std::min(at, s.size()), 64) + 1);
        s.erase(std::min(at, s.size()), n);
        break;
      }
      case 4: {  // copy a range elsewhere
        if (s.empty()) break;
        const size_t from = below(s.size()), n = below(std::min<size_t>(s.size() - from, 128) + 1);
        s.insert(below(s.size() + 1), s.substr(from, n));
        break;
      }
      case 5:
      case 6:  // a dictionary token
        s.insert(at, token());
        break;
      case 7: {  // splice with another input
        if (pool.empty()) break;
        const std::string& other = pool[below(pool.size())];
        const size_t from = below(other.size() + 1);
        s = s.substr(0, at) + other.substr(from);
        break;
      }
      case 8: {  // a long repeat: deep nesting, long fields, many braces
        const std::string unit = below(2) || s.empty() ? token() : s.substr(below(s.size()), 1 + below(3));
        const size_t times = 1 + below(below(4) == 0 ? 20000 : 200);
        std::string run;
        for (size_t k = 0; k < times && run.size() < max_len_; ++k) run += unit;
        s.insert(at, run);
        break;
      }
      default:  // truncate
        s.resize(at);
    }
  }

  std::mt19937_64 rng_;
  size_t max_len_;
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  long long runs = -1;
  std::uint64_t seed = 1;
  size_t max_len = 1 << 16;
  unsigned hang_seconds = 10;
  std::string crash_dir = ".";
  std::vector<std::string> corpus_dirs;
  g_target = argc > 0 ? argv[0] : "fuzz";
  if (const char* slash = std::strrchr(g_target, '/')) g_target = slash + 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", g_target, a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--seconds")
        seconds = std::stod(next());
      else if (a == "--runs")
        runs = std::stoll(next());
      else if (a == "--seed")
        seed = std::stoull(next());
      else if (a == "--max-len")
        max_len = std::stoull(next());
      else if (a == "--hang-seconds")
        hang_seconds = static_cast<unsigned>(std::stoul(next()));
      else if (a == "--crash-dir")
        crash_dir = next();
      else if (!a.empty() && a[0] == '-')
        throw std::invalid_argument(a);
      else
        corpus_dirs.push_back(a);
    } catch (const std::exception&) {
      std::fprintf(stderr,
                   "usage: %s [--seconds S] [--runs N] [--seed X] [--max-len BYTES] [--hang-seconds S] "
                   "[--crash-dir DIR] CORPUS_DIR...\n",
                   g_target);
      return 2;
    }
  }
  std::vector<std::string> pool;
  for (const auto& dir : corpus_dirs) {
    std::error_code ec;
    if (fs::is_regular_file(dir, ec)) {  // a single seed file
      pool.push_back(slurp(dir));
      continue;
    }
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file()) pool.push_back(slurp(entry.path()));
    if (ec) {
      std::fprintf(stderr, "%s: cannot read the corpus %s: %s\n", g_target, dir.c_str(),
                   ec.message().c_str());
      return 2;
    }
  }
  if (pool.empty()) pool.push_back("");
  const size_t seeds = pool.size();

  g_crash_path =
      (fs::path(crash_dir) / (std::string("crash-") + g_target + "-" + std::to_string(::getpid()))).string();
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(save_current);
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;  // once: a crash inside the handler ends the process
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) sigaction(s, &sa, nullptr);

  Mutator mutator(seed, max_len);
  std::set<std::string> outcomes;
  const auto start = std::chrono::steady_clock::now();
  double slowest = 0;
  long long done = 0;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // The seeds run first, unchanged; then mutants of the pool.
  for (; runs < 0 || done < runs; ++done) {
    if (runs < 0 && (done & 63) == 0 && elapsed() >= seconds) break;
    g_current = done < static_cast<long long>(seeds) ? pool[done]
                                                     : mutator.mutate(pool[mutator.pick(pool.size())], pool);
    const auto t0 = std::chrono::steady_clock::now();
    alarm(hang_seconds);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(g_current.data()), g_current.size());
    alarm(0);
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (outcomes.insert(amp_lab_fuzz_outcome()).second && pool.size() < 20000) pool.push_back(g_current);
  }
  std::printf(
      "%s: %lld inputs in %.1f s (seed %llu, %zu seeds), %zu distinct outcomes, 0 crashes, "
      "0 sanitizer reports, 0 hangs, slowest input %.1f ms\n",
      g_target, done, elapsed(), static_cast<unsigned long long>(seed), seeds, outcomes.size(),
      slowest * 1000);
  return 0;
}
