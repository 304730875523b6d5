// Fuzz target: the saved progress's loader (runner::parse_progress) on arbitrary bytes. Properties: it
// returns the progress or nullopt with why, never throws or crashes (deep nesting overflowed the stack);
// the reason is one printable, bounded line; what it accepts has answers amp-lab writes.
//   build/tests/fuzz_progress --seconds 60 tests/fuzz/corpus/progress      (or: scripts/fuzz 60)
#include <cstdio>
#include <cstdlib>

#include "fuzz_harness.h"
#include "runner/progress.h"

namespace {

std::string g_outcome;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto progress = runner::parse_progress(text, &why);
  if (progress) {
    for (const auto& [track, questions] : progress->quiz)
      for (const auto& [number, r] : questions)
        if (number < 1 || r.hints < 0 || r.attempts < 1 || (r.answer && (r.answer < 'a' || r.answer > 'z'))) {
          std::fprintf(stderr, "BROKEN PROPERTY: accepted progress holds a record amp-lab does not write\n");
          std::abort();
        }
    g_outcome = "ok";
  } else {
    amp_lab_fuzz_check_message(why, "", /*max_glyphs=*/200);
    g_outcome = amp_lab_fuzz_shape(why);
  }
  return 0;
}

std::string amp_lab_fuzz_outcome() {
  return g_outcome;
}

const std::vector<std::string>& amp_lab_fuzz_dictionary() {
  static const std::vector<std::string> d = {"{",
                                             "}",
                                             "[",
                                             "]",
                                             ",",
                                             ":",
                                             "\"",
                                             "\\",
                                             "\\u0000",
                                             "1",
                                             "-1",
                                             "1e999",
                                             "null",
                                             "true",
                                             "\"version\": 1",
                                             "\"quiz\": ",
                                             "\"exercises\": ",
                                             "\"core\": ",
                                             "\"questions\": ",
                                             "\"1\": ",
                                             "\"id\": \"q1\"",
                                             "\"outcome\": \"right\"",
                                             "\"answer\": \"b\"",
                                             "\"hints\": 0",
                                             "\"attempts\": 2",
                                             "\"at\": \"2026-11-30T08:03:12Z\"",
                                             "\xc3\xa9",
                                             "\xff"};
  return d;
}
