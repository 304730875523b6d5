// The glossary (glossary.yaml, read by src/runner/glossary.h): it finds terms as whole words, glosses each
// once per walk (in the real amp-lab's walk too), covers every piece of jargon the labs print (a list kept
// here, apart from the glossary), and no gloss gives a question's answer away before it is asked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "lab/catalog.h"
#include "lab/report.h"
#include "lab/text.h"
#include "runner/catalog_labs.h"
#include "runner/glossary.h"
#include "runner/quiz.h"
#include "support/answer_leak.h"
#include "support/cli.h"
#include "support/process.h"

namespace {

// Jargon a newcomer may not know, as the labs may print it. Kept here, not taken from the glossary, so
// that a term a lab starts to use and the glossary lacks fails the test below. Matched whole-word,
// case-insensitively except the two whose lower case is an English word.
const std::vector<std::string> kJargon = {"all-reduce",
                                          "all-reduced",
                                          "amax",
                                          "AMP",
                                          "Adam",
                                          "AdamW",
                                          "AMX",
                                          "ATen",
                                          "autocast",
                                          "autograd",
                                          "avx512_bf16",
                                          "backoff",
                                          "back-off",
                                          "backward",
                                          "bf16",
                                          "bfloat16",
                                          "binade",
                                          "bitwise",
                                          "c10d",
                                          "cast_inputs",
                                          "checkpoint",
                                          "clip",
                                          "cuBLAS",
                                          "CUDA",
                                          "current scaling",
                                          "custom_fwd",
                                          "custom_bwd",
                                          "CustomFwd",
                                          "CustomBwd",
                                          "DDP",
                                          "delayed scaling",
                                          "denormal",
                                          "dtype",
                                          "E4M3",
                                          "E4M3fn",
                                          "E5M2",
                                          "effective batch",
                                          "epsilon",
                                          "eps",
                                          "exponent",
                                          "float16",
                                          "float32",
                                          "float64",
                                          "flush",
                                          "flushed",
                                          "forward",
                                          "found_inf",
                                          "FP8",
                                          "fp16",
                                          "fp32",
                                          "fp64",
                                          "FSDP",
                                          "GFLOP/s",
                                          "Gloo",
                                          "gradient penalty",
                                          "GradScaler",
                                          "growth factor",
                                          "growth interval",
                                          "growth_interval",
                                          "inf",
                                          "kernel",
                                          "LibTorch",
                                          "Linear",
                                          "loss scale",
                                          "loss scaling",
                                          "lr",
                                          "mantissa",
                                          "master weight",
                                          "master weights",
                                          "matmul",
                                          "micro-batch",
                                          "micro-batches",
                                          "mixed precision",
                                          "MLP",
                                          "MSE",
                                          "NaN",
                                          "NCCL",
                                          "numeric_limits",
                                          "oneDNN",
                                          "overflow",
                                          "process group",
                                          "process_group",
                                          "rank",
                                          "ranks",
                                          "replica",
                                          "_scaled_mm",
                                          "SGD",
                                          "shard",
                                          "sharded",
                                          "ShardedGradScaler",
                                          "split-K",
                                          "subnormal",
                                          "subnormals",
                                          "Tensor Core",
                                          "TF32",
                                          "ties to even",
                                          "ulp",
                                          "ulps",
                                          "underflow",
                                          "unscale",
                                          "unscale_",
                                          "unscaled",
                                          "ZeRO",
                                          "attention",
                                          "bmm",
                                          "find_nonfinite",
                                          "softmax",
                                          "stochastic rounding",
                                          "Kahan",
                                          "global norm"};

bool exact_case(const std::string& jargon) {
  return jargon == "ZeRO" || jargon == "AMP";
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether `text` uses `word` as a whole word, or its plural; independent of the glossary's own matcher.
bool uses(const std::string& text, const std::string& word) {
  const auto eq = [&](char a, char b) {
    return exact_case(word)
               ? a == b
               : std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  const auto ends_at = [&](size_t i) {
    return i >= text.size() || !word_char(text[i]) || !word_char(word.back());
  };
  for (auto it = text.begin(); (it = std::search(it, text.end(), word.begin(), word.end(), eq)) != text.end();
       ++it) {
    const size_t at = static_cast<size_t>(it - text.begin()), end = at + word.size();
    const bool starts = at == 0 || !word_char(text[at - 1]) || !word_char(word.front());
    const bool plural =
        end < text.size() && std::tolower(static_cast<unsigned char>(text[end])) == 's' && ends_at(end + 1);
    if (starts && (ends_at(end) || plural)) return true;
  }
  return false;
}

std::vector<std::string> names(const std::vector<const runner::Term*>& terms) {
  std::vector<std::string> out;
  for (const auto* t : terms) out.push_back(t->name);
  return out;
}

std::string lab_executable(const lab::LabDecl& decl) {
  return AMP_LAB_BINARY_DIR "/bin/" + decl.executable();
}

// What a lab's executable prints with `flag` (--no-color: its text; --json: its report) in quick mode.
std::string lab_output(const lab::LabDecl& decl, const std::string& flag) {
  const auto run = test_support::run_process({lab_executable(decl), "--quick", flag}, 300);
  INFO(decl.executable() << " --quick " << flag << " exited " << run.code << "; stderr: " << run.err);
  REQUIRE((run.code == 0 || run.code == 1));
  return run.out;
}

// The project's glossary.yaml, as the runner reads it.
const runner::Glossary& glossary() {
  static const runner::Glossary g = runner::load_glossary(AMP_LAB_SOURCE_DIR "/glossary.yaml");
  return g;
}

std::vector<const runner::Term*> terms_in(const std::string& text) {
  return glossary().terms_in(text);
}

const runner::Term* find_term(const std::string& word) {
  return glossary().find(word);
}

}  // namespace

TEST_CASE("terms are found as whole words, case-insensitively, with plurals and across line breaks") {
  CHECK(names(terms_in("the ulps of a binade")) == std::vector<std::string>{"ulp", "binade"});
  CHECK(names(terms_in("Fp16 and BF16")) == std::vector<std::string>{"fp16", "bf16"});
  CHECK(names(terms_in("the loss\n    scale grew")) == std::vector<std::string>{"loss scale"});
  CHECK(names(terms_in("\x1b[1mfp16\x1b[0m zeroed")) == std::vector<std::string>{"fp16"});
  CHECK(names(terms_in("amp::GradScaler, torch.amp.GradScaler")) == std::vector<std::string>{"GradScaler"});
  CHECK(names(terms_in("scaler.unscale_(opt)")) == std::vector<std::string>{"GradScaler", "unscale"});
  // Not inside a longer word or identifier.
  CHECK(terms_in("information, infant, ulpx, rankings").empty());
  CHECK(names(terms_in("avx512_bf16")) == std::vector<std::string>{"AVX-512"});
  // ZeRO is not the English zero.
  CHECK(terms_in("55% became zero").empty());
  CHECK(names(terms_in("ZeRO/FSDP style")) == std::vector<std::string>{"ZeRO", "FSDP"});
  // Each term once, in the order it first appears.
  CHECK(names(terms_in("fp16, then bf16, then fp16 again")) == std::vector<std::string>{"fp16", "bf16"});
}

TEST_CASE("find_term knows a term by its name or any variant, and nothing else") {
  REQUIRE(find_term("subnormals") != nullptr);
  CHECK(find_term("subnormals")->name == "subnormal");
  CHECK(find_term("denormal")->name == "subnormal");
  CHECK(find_term("growth_interval")->name == "growth interval");
  CHECK(find_term("banana") == nullptr);
  CHECK(find_term("zero") == nullptr);
}

TEST_CASE("a walk glosses each term once, the first time a text uses it") {
  std::set<std::string> glossed;
  CHECK(names(glossary().new_terms("fp16 underflow", glossed)) ==
        std::vector<std::string>{"fp16", "underflow"});
  CHECK(names(glossary().new_terms("fp16 and a binade", glossed)) == std::vector<std::string>{"binade"});
  CHECK(glossary().new_terms("underflow in fp16 again", glossed).empty());
  CHECK(glossed == std::set<std::string>{"fp16", "underflow", "binade"});
  const std::string glosses = runner::format_glosses({find_term("binade"), find_term("loss scale")}, 60);
  CHECK(glosses.rfind("  binade: the numbers from one power of two to the next", 0) == 0);
  CHECK(glosses.find("\n  loss scale: the factor the loss is multiplied by before\n      backward\n") !=
        std::string::npos);
  CHECK(runner::format_glosses({}, 80).empty());
}

TEST_CASE(
    "the glossary holds the terms the walk must gloss, each with a one-line definition, most with a source") {
  for (const char* name :
       {"binade",         "ulp",      "subnormal", "amax",     "loss scale", "growth interval",
        "master weights", "autocast", "c10d",      "Gloo",     "NCCL",       "DDP",
        "ZeRO",           "FSDP",     "E4M3",      "E5M2",     "TF32",       "Tensor Core",
        "GradScaler",     "bf16",     "fp16",      "mantissa", "exponent",   "flush to zero",
        "split-K",        "oneDNN",   "AMX"}) {
    CAPTURE(name);
    const runner::Term* t = find_term(name);
    REQUIRE(t != nullptr);
    CHECK(t->name == name);
  }
  size_t sourced = 0;
  std::set<std::string> seen;
  for (const auto& t : glossary().terms()) {
    CAPTURE(t.name);
    CHECK(seen.insert(t.name).second);
    CHECK(t.definition.find('\n') == std::string::npos);
    CHECK(t.definition.size() >= 10);
    // One line at 80 columns as the walk glosses it ("  name: definition"): a gloss of two lines or more
    // pushed the lab's measured part and the question off a 40-line screen.
    CHECK(runner::format_glosses({&t}, 80).find('\n') == runner::format_glosses({&t}, 80).size() - 1);
    CHECK(find_term(t.name) == &t);
    for (const auto& v : t.variants) CHECK_MESSAGE(find_term(v) == &t, v << " belongs to another term");
    sourced += !t.source.empty();
  }
  CHECK(sourced * 10 >= glossary().terms().size() * 9);
}

TEST_CASE("a term is glossed the first time the walk shows it, once, and amp-lab glossary lists the terms") {
  const auto r = test_support::run("quiz --quick --device cpu --only 2,7 --file-order --answers ss");
  REQUIRE(r.code == 0);
  // Lab 02 shows them first; lab 07 does not gloss them again (its report has a "GradScaler: ..." row).
  CHECK(test_support::count(r.out, "  subnormal: a nonzero") == 1);
  CHECK(test_support::count(r.out, "  GradScaler: PyTorch's loss-scaling object") == 1);
  const auto g = test_support::run("glossary");
  CHECK(g.code == 0);
  for (const char* term : {"subnormal:", "GradScaler:", "ulp:", "E4M3:"})
    CHECK(test_support::has(g.out, term));
}

TEST_CASE("amp-lab glossary lists every term with its source, within the width") {
  for (const size_t width : {80, 120}) {
    std::ostringstream out;
    runner::print_glossary(out, glossary(), width);
    const std::string text = out.str();
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      // A URL is one word: it may stand alone on a line wider than the width, but nothing else may.
      const bool lone_word = line.find(' ', line.find_first_not_of(' ')) == std::string::npos;
      CHECK_MESSAGE((lab::display_width(line) <= width || lone_word), line);
    }
    for (const auto& t : glossary().terms()) {
      CHECK_MESSAGE(text.find("\n" + t.name + ": ") != std::string::npos, t.name);
      if (!t.source.empty()) {
        const std::string last_word = t.source.substr(t.source.rfind(' ') + 1);
        CHECK_MESSAGE(text.find(last_word) != std::string::npos, t.name << ": " << last_word);
      }
    }
  }
}

TEST_CASE("every lab's output uses only jargon the glossary defines") {
  for (const auto& decl : lab::catalog()) {
    CAPTURE(decl.id);
    const std::string text = lab_output(decl, "--no-color");
    REQUIRE_FALSE(text.empty());
    const auto found = names(terms_in(text));
    for (const auto& jargon : kJargon) {
      if (!uses(text, jargon)) continue;
      CAPTURE(jargon);
      const runner::Term* t = find_term(jargon);
      CHECK_MESSAGE(t != nullptr, decl.executable()
                                      << " prints '" << jargon << "', which the glossary lacks");
      if (t) CHECK(std::find(found.begin(), found.end(), t->name) != found.end());
    }
  }
}

TEST_CASE("no question's answer is given away by the glosses of what its lab shows before it") {
  const runner::Quiz quiz = runner::load_quiz(AMP_LAB_SOURCE_DIR "/quiz.yaml", runner::catalog_lab);
  for (const auto& q : quiz.questions) {
    CAPTURE(q.id);
    const lab::LabDecl* decl = lab::find_decl(q.lab);
    REQUIRE(decl != nullptr);
    const lab::Report report = lab::Report::from_json(nlohmann::json::parse(lab_output(*decl, "--json")));
    const std::string measured = report.render_text({.part = lab::Part::Measured, .heading = decl->heading});
    // A walk that starts at this question glosses every term its measured part uses, and shows the glosses
    // with that part (the text tests/test_labs.cpp scores). The glosses may not make it give the answer
    // away, nor add an answer's word to a part that already does: that is the lab's to fix.
    const std::string glosses = runner::format_glosses(terms_in(measured), 0);
    const auto alone = test_support::leak_score(measured, q.prompt, q.options, q.answer);
    const auto with = test_support::leak_score(measured + glosses, q.prompt, q.options, q.answer);
    std::string added;
    for (const auto& w : with.found)
      if (std::find(alone.found.begin(), alone.found.end(), w) == alone.found.end()) added += " " + w;
    INFO("glosses:\n" << glosses);
    INFO("the answer's words the glosses add:" << added << " (share " << alone.share() << " -> "
                                               << with.share() << "); run: " << with.run);
    CHECK((!with.gives_away() || (added.empty() && with.run == alone.run)));
  }
  // And no gloss holds a run of four of an answer's words, whichever lab shows it.
  for (const auto& t : glossary().terms())
    for (const auto& q : quiz.questions) {
      CAPTURE(t.name);
      CAPTURE(q.id);
      CHECK(
          test_support::leak_score(t.name + ": " + t.definition, q.prompt, q.options, q.answer).run.empty());
    }
}
