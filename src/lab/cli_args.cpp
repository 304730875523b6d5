#include "lab/cli_args.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string_view>

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

namespace {

// "  -h, --help", "      --quiz arg": the option's names as cxxopts writes them.
std::string option_label(const cxxopts::HelpOptionDetails& o) {
  const std::string& l = o.l.empty() ? std::string() : o.l.front();
  std::string label = "  " + (o.s.empty() ? std::string("   ") : "-" + o.s + (l.empty() ? "" : ","));
  if (!l.empty()) label += " --" + l;
  if (!o.is_boolean) label += " " + (o.arg_help.empty() ? std::string("arg") : o.arg_help);
  return label;
}

std::string option_description(const cxxopts::HelpOptionDetails& o) {
  if (!o.has_default || (o.is_boolean && o.default_value == "false")) return o.desc;
  return o.desc + " (default: " + (o.default_value.empty() ? "\"\"" : o.default_value) + ")";
}

void append_lines(std::string& out, const std::vector<std::string>& lines) {
  for (const auto& line : lines) out += line + "\n";
}

}  // namespace

std::string help_text(const cxxopts::Options& options, size_t width) {
  // cxxopts 3.1.1's own wrapper loses the character before a break when a word ends at the width (a
  // default path of the clone's length lost its ")"), so only its header (description and usage line,
  // asked for with a group that does not exist) comes from cxxopts, and every line is wrapped here.
  const std::string head = options.help({std::string("\x01")});
  std::string out;
  for (size_t start = 0; start < head.size();) {
    const size_t end = std::min(head.find('\n', start), head.size());
    const std::string line = head.substr(start, end - start);
    const size_t indent = line.find_first_not_of(' ');
    if (indent != std::string::npos)
      append_lines(out, wrap_lines(line.substr(indent), width, std::string(indent, ' '),
                                   std::string(indent + 2, ' ')));
    start = end + 1;
  }
  constexpr size_t kLongestLabel = 30, kGap = 2, kLeastRoom = 24;
  for (const auto& group : options.groups()) {
    const auto& details = options.group_help(group);
    out += "\n";
    if (!group.empty()) out += " " + group + " options:\n";
    size_t column = 0;
    for (const auto& o : details.options) column = std::max(column, option_label(o).size());
    column = std::min(column, kLongestLabel) + kGap;
    // A narrow screen gives the descriptions the whole width below their option, indented a little.
    const size_t hang = width > 0 && width < column + kLeastRoom ? 6 : column;
    for (const auto& o : details.options) {
      const std::string label = option_label(o);
      if (label.size() + kGap > hang) {
        out += label + "\n";
        append_lines(
            out, wrap_lines(option_description(o), width, std::string(hang, ' '), std::string(hang, ' ')));
      } else {
        append_lines(out, wrap_lines(option_description(o), width,
                                     label + std::string(hang - label.size(), ' '), std::string(hang, ' ')));
      }
    }
  }
  return out;
}

void add_context_options(cxxopts::Options& options, const std::string& dtype_help) {
  options.add_options()("device", "auto, cpu or cuda (auto picks CUDA when present)",
                        cxxopts::value<std::string>()->default_value("auto"));
  if (!dtype_help.empty()) options.add_options()("dtype", dtype_help, cxxopts::value<std::string>());
  options.add_options()("seed", "random seed (a non-negative integer)",
                        cxxopts::value<std::string>()->default_value("0"))(
      "quick", "smallest sizes that still show the effect (for tests)")(
      "flip", "remove the cause of the effect; the lab's checks should then fail");
}

bool names_option(int argc, const char* const* argv, const std::string& name) {
  const std::string flag = "--" + name;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") return false;  // what follows is positional
    if (arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size() + 1) == flag + "="))
      return true;
  }
  return false;
}

void add_lab_options(cxxopts::Options& options) {
  options.add_options()("json", "print the report as JSON")(
      "report-file",
      "write the JSON report to this file (whole, replacing it) and print none: what `amp-lab check` reads, "
      "on a channel the lab's code does not share",
      cxxopts::value<std::string>())("no-color", "plain text even on a terminal")("h,help", "show this help");
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
  // The failing write sets errno, which names the cause ("No space left on device"). When an earlier
  // write already failed (output past the stream's buffer), errno is that write's: the flush below may
  // write nothing and leave it alone.
  if (!std::ferror(stdout) && std::cout) errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  if (failed)
    throw OutputError(std::string("cannot write to standard output") +
                      (errno ? ": " + std::string(std::strerror(errno)) : ""));
}

}  // namespace lab
