// Fuzz target: the quiz loader (runner::parse_quiz) on arbitrary bytes. Properties: it returns a quiz or
// throws QuizError, never anything else; every error is one printable, bounded line naming the file;
// a quiz it accepts has clean fields and templates that fill.
//   build/tests/fuzz_quiz --seconds 60 tests/fuzz/corpus/quiz      (or: scripts/fuzz 60)
#include <cstdio>
#include <cstdlib>
#include <map>

#include "fuzz_harness.h"
#include "lab/text.h"
#include "runner/quiz.h"

namespace {

std::string g_outcome;

std::optional<runner::LabRef> fake_labs(const std::string& id) {
  if (id == "lab-a") return runner::LabRef{1, "01_lab_a"};
  if (id == "master-weights") return runner::LabRef{1, "01_master_weights"};
  return std::nullopt;
}

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "BROKEN PROPERTY: accepted quiz: %s\n", what);
  std::abort();
}

bool clean(const std::string& s) {
  if (s.empty() || lab::invalid_utf8_at(s) != std::string::npos) return false;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const runner::Quiz quiz = runner::parse_quiz(text, "fuzz.yaml", fake_labs);
    require(!quiz.questions.empty(), "no questions");
    require(clean(quiz.title), "title not clean");
    for (const auto& q : quiz.questions) {
      require(q.options.size() == 4 && q.answer >= 0 && q.answer < 4, "options or answer out of range");
      for (const auto* s : {&q.id, &q.lab, &q.prompt, &q.explanation, &q.hint})
        require(clean(*s), "field not clean");
      for (const auto& o : q.options) require(clean(o), "option not clean");
      std::map<std::string, std::string> values;
      for (const auto& name : runner::placeholders(q.explanation + "\n" + q.hint)) values[name] = "1.5";
      require(!runner::fill(q.explanation, values).empty(), "explanation filled to nothing");
      runner::fill(q.hint, values);
    }
    g_outcome = "ok";
  } catch (const runner::QuizError& e) {
    amp_lab_fuzz_check_message(e.what(), "fuzz.yaml", /*max_glyphs=*/1000);
    g_outcome = amp_lab_fuzz_shape(e.what());
  }
  return 0;
}

std::string amp_lab_fuzz_outcome() {
  return g_outcome;
}

const std::vector<std::string>& amp_lab_fuzz_dictionary() {
  static const std::vector<std::string> d = {"title: ",
                                             "intro: ",
                                             "questions:\n",
                                             "  - id: ",
                                             "    lab: ",
                                             "    prompt: ",
                                             "    options: ",
                                             "    answer: ",
                                             "    hint: ",
                                             "    explanation: ",
                                             "lab-a",
                                             "[A, B, C, D]",
                                             "{steps}",
                                             "{lost_share:value}",
                                             "{",
                                             "}",
                                             "{{",
                                             "\n---\n",
                                             "...\n",
                                             "&a ",
                                             "*a",
                                             "!!str ",
                                             "? ",
                                             ": ",
                                             "- ",
                                             "[",
                                             "]",
                                             "\"",
                                             "'",
                                             "\\e",
                                             "\\x00",
                                             "\\u202e",
                                             "\\uD800",
                                             "\xc3\xa9",
                                             "\xe2\x80\xae",
                                             "\xff",
                                             "\r",
                                             "\r\n",
                                             "\t",
                                             "~",
                                             "null",
                                             "|\n  ",
                                             ">-\n  ",
                                             "#"};
  return d;
}
