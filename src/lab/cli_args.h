// The command line before any LibTorch: argv limits, flag values, seeds and question lists, shared by
// the amp-lab runner and every lab executable. Kept free of LibTorch so it is fuzzed and sanitized alone.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <cxxopts.hpp>

namespace lab {

// Bad input from the user: printed as one line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Output that could not be written (a full disk, a closed stdout): printed as one line, exit code 3.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A signal (SIGINT, SIGTERM, SIGHUP) stopped what the lab was waiting for (lab 13's rank processes): the
// lab's command line (lab::lab_cli) prints the message and exits 128 + signal.
struct Interrupted : std::runtime_error {
  Interrupted(const std::string& what, int signal) : std::runtime_error(what), signal(signal) {}
  int signal;
};

enum ExitCode : int { kExitPass = 0, kExitCheckFailed = 1, kExitUsage = 2, kExitLabError = 3 };

// cxxopts 3.1.1 matches every argument with std::regex, whose recursion overflows the stack on an
// argument of about 25 KB; a path (PATH_MAX 4096) plus its flag name fits under this limit.
constexpr size_t kMaxArgBytes = 4200;
constexpr int kMaxArgs = 256;

// Refuses (UsageError) too many arguments or one longer than kMaxArgBytes, before any parser sees them.
void check_argv(int argc, const char* const* argv);

// The value of a flag that takes none: --quick, --quick=true/1 switch it on, --quick=false/0 off;
// cxxopts refuses any other value.
bool flag(const cxxopts::ParseResult& args, const std::string& name);

// A non-negative decimal integer below 2^64: digits only (no sign, no space).
std::uint64_t parse_seed(const std::string& text);
// "1,3,5": numbers from `valid` (a track's question numbers, ascending), each once; an empty item ("3," or
// "1,,2") is refused. The second form takes 1 to count.
std::vector<int> parse_question_list(const std::string& text, const std::vector<int>& valid,
                                     const std::string& flag_name = "--only");
std::vector<int> parse_question_list(const std::string& text, int count,
                                     const std::string& flag_name = "--only");

// The --help text of `options` laid out in `width` columns (lab::terminal_width()): its description and
// usage line, then each option with its description (and default) wrapped at word boundaries under a
// hanging indent. No character is lost or split, whatever the width or the length of a default path; a
// word wider than the room keeps a line of its own.
std::string help_text(const cxxopts::Options& options, size_t width);

// --dtype's description on the runner's command line, which passes it on to the labs that take one.
inline constexpr const char* kRunnerDtypeHelp =
    "fp16 or bf16: the 16-bit type of the labs that take --dtype (amp-lab list names them)";

// --device auto|cpu|cuda, --seed N, --quick, --flip, and --dtype fp16|bf16 described by `dtype_help`; an
// empty `dtype_help` leaves --dtype out (a lab whose question fixes its types: lab_cli refuses it).
void add_context_options(cxxopts::Options& options, const std::string& dtype_help = kRunnerDtypeHelp);

// Whether argv (after argv[0]) names the option `--name`, as "--name VALUE" or "--name=VALUE".
bool names_option(int argc, const char* const* argv, const std::string& name);

// --json, --no-color, -h/--help: the rest of a lab's command line.
void add_lab_options(cxxopts::Options& options);

// The context flags, checked but not yet resolved against this machine (that needs LibTorch).
struct ContextArgs {
  std::string device = "auto";
  std::optional<std::string> dtype;
  std::uint64_t seed = 0;
  bool quick = false;
  bool flip = false;
};
ContextArgs context_args(const cxxopts::ParseResult& args);

// Refuses a closed standard output (a file opened later would take its place) with OutputError.
void check_stdout_open();
// Flushes standard output; OutputError when anything written to it was lost (a full disk, a closed pipe).
void flush_stdout();

}  // namespace lab
