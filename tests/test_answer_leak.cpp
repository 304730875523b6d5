// The score that tells whether what the quiz shows before a question gives its answer away.
#include <doctest/doctest.h>

#include "support/answer_leak.h"

using test_support::leak_score;

namespace {

const std::string kPrompt =
    "Two models with two losses and two optimizers train in fp16. How should the GradScaler be used?";
const std::vector<std::string> kOptions = {
    "One scaler for everything: scale each loss, scaler.step() each optimizer, one scaler.update() per "
    "iteration",
    "One scaler per optimizer, each updated right after its optimizer's step",
    "One scaler, with update() called after each optimizer's step",
    "No scaler: with two optimizers each loss is small enough not to underflow"};

}  // namespace

TEST_CASE("words are lower-cased and stemmed, and a possessive is dropped") {
  CHECK(test_support::leak_words("FP16's Gradients underflowing") ==
        std::vector<std::string>{"fp16", "gradient", "underflow"});
}

TEST_CASE("a measured part that names the correct option's distinctive words gives the answer away") {
  // Lab 11's measured part once ended with this line (issue: "a second update() in one iteration refused
  // yes").
  const auto score =
      leak_score("a second update() in one iteration refused   yes\nshared scale backed off once", kPrompt,
                 kOptions, /*answer=*/0);
  CHECK(score.distinctive == std::vector<std::string>{"everyth", "scale", "iteration"});
  CHECK(score.found == std::vector<std::string>{"scale", "iteration"});
  CHECK(score.gives_away());
}

TEST_CASE("numbers and neutral words about the experiment do not") {
  const auto score =
      leak_score("optimizer 0 skipped 0 of 40 steps, optimizer 1 skipped 1; gradients within 1e-3", kPrompt,
                 kOptions, /*answer=*/0);
  CHECK(score.found.empty());
  CHECK_FALSE(score.gives_away());
}

TEST_CASE("four consecutive words of the option give it away even when they are common ones") {
  const std::vector<std::string> options = {"a b", "fp16 to fp32 in memory", "c d", "e f"};
  const auto score =
      leak_score("values go fp16 to fp32 in memory here", "prompt fp16 fp32 memory", options, 1);
  CHECK(score.distinctive.empty());  // every word is in the prompt
  CHECK(score.run == "fp16 to fp32 in memory");
  CHECK(score.gives_away());
}
