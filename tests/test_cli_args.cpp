// The command line before LibTorch: argv limits ahead of cxxopts, flags that honour their value,
// strict --seed and --only.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lab/cli_args.h"

namespace {

// Parses `words` with the options of a lab executable; returns the checked context flags.
struct Parsed {
  lab::ContextArgs context;
  bool json = false;
};

Parsed parse(std::vector<std::string> words) {
  std::vector<const char*> argv{"lab"};
  for (const auto& w : words) argv.push_back(w.c_str());
  lab::check_argv(static_cast<int>(argv.size()), argv.data());
  cxxopts::Options options("lab", "");
  lab::add_context_options(options);
  lab::add_lab_options(options);
  const auto args = options.parse(static_cast<int>(argv.size()), argv.data());
  return {lab::context_args(args), lab::flag(args, "json")};
}

}  // namespace

TEST_CASE("an argument longer than the limit is refused before cxxopts' regex can overflow the stack") {
  for (const std::string& arg :
       {"--" + std::string(40000, 'y'), "--seed=" + std::string(40000, '1'), "-" + std::string(30000, 'q')}) {
    CAPTURE(arg.size());
    CHECK_THROWS_AS(parse({arg}), lab::UsageError);
  }
  CHECK_THROWS_WITH(
      parse({"--quick", std::string(lab::kMaxArgBytes + 1, 'a')}),
      "argument 2 ('aaaaaaaaaaaaaaaaaaaa...' (4201 bytes)) is 4201 bytes long; the limit is 4200");
  // The longest accepted argument still parses (this is what the sanitized build runs with ASan's bigger
  // frames).
  const std::string longest = "--seed=" + std::string(lab::kMaxArgBytes - 7, '9');
  CHECK_THROWS_WITH(parse({longest}), doctest::Contains("--seed must be a non-negative integer below 2^64"));
  std::vector<std::string> many(lab::kMaxArgs, "--quick");
  CHECK_THROWS_WITH(parse(many), doctest::Contains("at most 255 are accepted"));
}

TEST_CASE("a flag's value is honoured: =false and =0 switch it off, =true and =1 on, others are refused") {
  CHECK_FALSE(parse({}).context.quick);
  CHECK(parse({"--quick"}).context.quick);
  CHECK(parse({"--flip=true"}).context.flip);
  CHECK(parse({"--flip=1"}).context.flip);
  CHECK_FALSE(parse({"--flip=false"}).context.flip);
  CHECK_FALSE(parse({"--quick=0"}).context.quick);
  CHECK_FALSE(parse({"--json=false"}).json);
  CHECK(parse({"--json"}).json);
  CHECK_THROWS_AS(parse({"--flip=maybe"}), cxxopts::exceptions::exception);
}

TEST_CASE("--seed takes digits only: no sign, no space, nothing past 2^64 - 1") {
  CHECK(parse({"--seed", "42"}).context.seed == 42);
  CHECK(parse({"--seed=18446744073709551615"}).context.seed == 18446744073709551615ull);
  for (const char* bad : {" -1", "-1", "+1", " 1", "1 ", "1e9", "", "0x10", "18446744073709551616"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(lab::parse_seed(bad), lab::UsageError);
  }
  CHECK_THROWS_WITH(lab::parse_seed(" -1"), "--seed must be a non-negative integer below 2^64, got ' -1'");
}

TEST_CASE("--only takes question numbers in range, each once, with no empty item") {
  CHECK(lab::parse_question_list("3", 8) == std::vector<int>{3});
  CHECK(lab::parse_question_list("1,3,8", 8) == std::vector<int>{1, 3, 8});
  for (const char* bad : {"3,", ",3", "1,,2", "", "0", "9", "1,x", " 1", "-1", "99999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(lab::parse_question_list(bad, 8), lab::UsageError);
  }
  CHECK_THROWS_WITH(lab::parse_question_list("3,", 8),
                    "--only '3,': expected question numbers from 1 to 8, separated by commas");
  CHECK_THROWS_WITH(lab::parse_question_list("2,2", 8), "--only '2,2': question 2 is given twice");
}

TEST_CASE("--device and --dtype names are checked, and quoted escaped in the message") {
  CHECK(parse({"--device", "cpu"}).context.device == "cpu");
  CHECK(parse({"--dtype", "bf16"}).context.dtype == "bf16");
  CHECK_THROWS_WITH(parse({"--device", "\x1b[2Jtpu"}),
                    "--device must be auto, cpu or cuda, got '\\x1b[2Jtpu'");
  CHECK_THROWS_WITH(parse({"--dtype", "fp32\n"}), "--dtype must be fp16 or bf16, got 'fp32\\n'");
}

namespace {

// The text without its blanks: wrapping may move words to other lines, never change or lose a character.
std::string ink(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' && c != '\n') out += c;
  return out;
}

// Options as the commands make them, with `path` where a command shows a default path (the quiz file,
// the exercises' workspace) and in a cxxopts default value.
cxxopts::Options options_with(const std::string& path) {
  cxxopts::Options options("amp-lab quiz",
                           "Take the mixed-precision quiz; every question runs its lab first.");
  lab::add_context_options(options);
  options.add_options()("answers",
                        "answer without prompts: one letter per question, s to skip (e.g. acbdbbcd)",
                        cxxopts::value<std::string>())(
      "track", "the questions to walk: core (the default, 8 questions), recipes (4), scale (2), or all",
      cxxopts::value<std::string>())("quiz", "the quiz file (default: " + path + ")",
                                     cxxopts::value<std::string>())(
      "dir", "the workspace folder (default: " + path + "/workspace)", cxxopts::value<std::string>())(
      "log", "where the log goes", cxxopts::value<std::string>()->default_value(path))(
      "a-very-long-option-name-for-the-label", "its description on the lines below");
  lab::add_lab_options(options);
  return options;
}

}  // namespace

TEST_CASE(
    "help text loses no character at any width from 40 to 200, for default paths of 1 to 200 characters") {
  // cxxopts' own wrapper dropped the character before a break when a word ended at the width: the default
  // quiz path of a clone of the right length lost its ")".
  size_t renders = 0, lost = 0, too_wide = 0;
  std::string first_lost, first_too_wide;
  for (size_t length = 1; length <= 200; ++length) {
    const std::string path = "/" + std::string(length - 1, 'p');
    const cxxopts::Options options = options_with(path);
    const std::string whole = lab::help_text(options, 0);  // 0: no width, nothing wrapped
    REQUIRE(whole.find("(default: " + path + ")") != std::string::npos);
    for (size_t width = 40; width <= 200; ++width) {
      const std::string text = lab::help_text(options, width);
      const std::string at = "path of " + std::to_string(length) + ", width " + std::to_string(width) + ":\n";
      if (ink(text) != ink(whole) && lost++ == 0) first_lost = at + text;
      // Every line fits, unless it is one word too wide for any line (a long path), alone after the indent.
      for (size_t b = 0, e; b < text.size(); b = e + 1) {
        e = text.find('\n', b);
        const std::string line = text.substr(b, e - b);
        if (line.size() > width && line.find(' ', line.find_first_not_of(' ')) != std::string::npos &&
            too_wide++ == 0)
          first_too_wide = at + line;
      }
      ++renders;
    }
  }
  CAPTURE(first_lost);
  CAPTURE(first_too_wide);
  CHECK(lost == 0);
  CHECK(too_wide == 0);
  CHECK(renders == 200 * 161);
}
