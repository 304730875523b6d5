// Fuzz target: the command line every executable shares (argv limits, cxxopts, flag values, --seed,
// --only) on arbitrary bytes split at NUL into arguments. Properties: it parses or throws UsageError or
// a cxxopts error, never anything else (a stack overflow in cxxopts' std::regex was the old failure);
// every message is one printable, bounded line; a parsed seed is digits only.
//   build/tests/fuzz_cli --seconds 60 tests/fuzz/corpus/cli      (or: scripts/fuzz 60)
#include <cstdio>
#include <cstdlib>

#include "fuzz_harness.h"
#include "lab/cli_args.h"
#include "lab/text.h"

namespace {

std::string g_outcome;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words(1, "");
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      words.emplace_back();
    else
      words.back() += static_cast<char>(data[i]);
  }
  std::vector<const char*> argv{"fuzz"};
  for (const auto& w : words) argv.push_back(w.c_str());
  const int argc = static_cast<int>(argv.size());
  try {
    lab::check_argv(argc, argv.data());
    cxxopts::Options options("fuzz", "the shared command line");
    lab::add_context_options(options);
    lab::add_lab_options(options);
    options.add_options()("only", "questions", cxxopts::value<std::string>())("quiz", "file",
                                                                              cxxopts::value<std::string>());
    const auto args = options.parse(argc, argv.data());
    const lab::ContextArgs c = lab::context_args(args);
    if (args.count("only")) {
      const auto only = lab::parse_question_list(args["only"].as<std::string>(), /*count=*/8);
      for (int n : only)
        if (n < 1 || n > 8) std::abort();
    }
    const std::string seed = args["seed"].as<std::string>();
    for (char ch : seed)
      if (ch < '0' || ch > '9') {
        std::fprintf(stderr, "BROKEN PROPERTY: seed %s accepted as %llu\n", lab::quote(seed).c_str(),
                     static_cast<unsigned long long>(c.seed));
        std::abort();
      }
    g_outcome = std::string("ok") + (c.quick ? " quick" : "") + (c.flip ? " flip" : "") +
                (lab::flag(args, "json") ? " json" : "");
  } catch (const lab::UsageError& e) {
    amp_lab_fuzz_check_message(e.what(), "", /*max_glyphs=*/600);  // our own messages, quoted as they are
    g_outcome = amp_lab_fuzz_shape(e.what());
  } catch (const cxxopts::exceptions::exception& e) {
    amp_lab_fuzz_check_message(lab::safe_line(e.what()), "", /*max_glyphs=*/600);  // as main() prints them
    g_outcome = "cxxopts: " + amp_lab_fuzz_shape(e.what());
  }
  return 0;
}

std::string amp_lab_fuzz_outcome() {
  return g_outcome;
}

const std::vector<std::string>& amp_lab_fuzz_dictionary() {
  static const std::vector<std::string> d = {std::string(1, '\0'),
                                             "--seed",
                                             "--seed=",
                                             "--device",
                                             "cuda",
                                             "cpu",
                                             "auto",
                                             "--dtype",
                                             "bf16",
                                             "fp16",
                                             "--quick",
                                             "--flip",
                                             "--json",
                                             "--no-color",
                                             "--help",
                                             "-h",
                                             "--only",
                                             "1,3",
                                             ",",
                                             "=false",
                                             "=0",
                                             "=true",
                                             "=1",
                                             "=yes",
                                             "--only=",
                                             "--quiz=",
                                             "-",
                                             "--",
                                             " ",
                                             "-1",
                                             "18446744073709551616",
                                             "\x1b[2J",
                                             "\n",
                                             "\xff",
                                             "q"};
  return d;
}
