#include "lab/cli_args.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "lab/text.h"

namespace lab {

void check_argv(int argc, const char* const* argv) {
  if (argc > kMaxArgs)
    throw UsageError(fmt::format("{} arguments; at most {} are accepted", argc - 1, kMaxArgs - 1));
  for (int i = 1; i < argc; ++i) {
    const size_t bytes = std::strlen(argv[i]);
    if (bytes > kMaxArgBytes)
      throw UsageError(fmt::format("argument {} ({}) is {} bytes long; the limit is {}", i,
                                   quote(argv[i], 20), bytes, kMaxArgBytes));
  }
}

bool flag(const cxxopts::ParseResult& args, const std::string& name) {
  return args.count(name) && args[name].as<bool>();
}

std::uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw UsageError("--seed must be a non-negative integer below 2^64, got " + quote(text));
  return value;
}

std::vector<int> parse_question_list(const std::string& text, const std::vector<int>& valid,
                                     const std::string& flag_name) {
  std::string numbers_text;
  for (int n : valid) numbers_text += (numbers_text.empty() ? "" : ", ") + std::to_string(n);
  const bool contiguous =
      !valid.empty() && valid.back() - valid.front() + 1 == static_cast<int>(valid.size());
  if (contiguous) numbers_text = fmt::format("from {} to {}", valid.front(), valid.back());
  const std::string expected = "expected question numbers " + numbers_text + ", separated by commas";
  if (text.empty()) throw UsageError(flag_name + ": no question numbers given; " + expected);
  std::vector<int> numbers;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool digits = !item.empty() && item.size() <= 4 &&
                        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int n = digits ? std::stoi(item) : 0;
    if (std::find(valid.begin(), valid.end(), n) == valid.end())
      throw UsageError(fmt::format("{} {}: {}", flag_name, quote(text), expected));
    if (std::find(numbers.begin(), numbers.end(), n) != numbers.end())
      throw UsageError(fmt::format("{} {}: question {} is given twice", flag_name, quote(text), n));
    numbers.push_back(n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return numbers;
}

std::vector<int> parse_question_list(const std::string& text, int count, const std::string& flag_name) {
  std::vector<int> valid(static_cast<size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) valid[static_cast<size_t>(i)] = i + 1;
  return parse_question_list(text, valid, flag_name);
}

void add_context_options(cxxopts::Options& options) {
  options.add_options()("device", "auto, cpu or cuda (auto picks CUDA when present)",
                        cxxopts::value<std::string>()->default_value("auto"))(
      "dtype", "16-bit type: fp16 or bf16 (default: bf16 on CPU, fp16 on CUDA)",
      cxxopts::value<std::string>())("seed", "random seed (a non-negative integer)",
                                     cxxopts::value<std::string>()->default_value("0"))(
      "quick", "smallest sizes that still show the effect (for tests)")(
      "flip", "remove the cause of the effect; the lab's checks should then fail");
}

void add_lab_options(cxxopts::Options& options) {
  options.add_options()("json", "print the report as JSON")("no-color", "plain text even on a terminal")(
      "h,help", "show this help");
}

ContextArgs context_args(const cxxopts::ParseResult& args) {
  ContextArgs c;
  c.device = args["device"].as<std::string>();
  if (c.device != "auto" && c.device != "cpu" && c.device != "cuda")
    throw UsageError("--device must be auto, cpu or cuda, got " + quote(c.device));
  if (args.count("dtype")) {
    c.dtype = args["dtype"].as<std::string>();
    static const char* names[] = {"fp16", "float16", "half", "bf16", "bfloat16"};
    if (std::none_of(std::begin(names), std::end(names), [&](const char* n) { return *c.dtype == n; }))
      throw UsageError("--dtype must be fp16 or bf16, got " + quote(*c.dtype));
  }
  c.seed = parse_seed(args["seed"].as<std::string>());
  c.quick = flag(args, "quick");
  c.flip = flag(args, "flip");
  return c;
}

void check_stdout_open() {
  if (fcntl(STDOUT_FILENO, F_GETFD) == -1) throw OutputError("standard output is closed");
}

void flush_stdout() {
  errno = 0;  // the first failing write sets it, which names the cause ("No space left on device")
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (failed)
    throw OutputError(std::string("cannot write to standard output") +
                      (errno ? ": " + std::string(std::strerror(errno)) : ""));
}

}  // namespace lab
