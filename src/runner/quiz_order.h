// The order a question's options are shown in. quiz.yaml's letters are the options' ids (stable: the key,
// why_not and progress name options by them); the walk shows them in an order drawn per learner and per
// attempt, so that a key's place tells nothing and typing a, b, c, d blind scores a quarter. The order is
// a function of (the learner's seed, the question's id, the attempt's number), and is saved with the
// attempt, so that an attempt can be shown again exactly as it was.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace runner {

// order[k] is the id (the index into Question::options) of the option shown at position k (letter 'a'+k).
using OptionOrder = std::vector<int>;

// quiz.yaml's own order: 0, 1, ..., n-1 (`--file-order`).
OptionOrder file_order(int n);

// The order drawn for `attempt` (1 for the first) of question `question_id` by the learner whose seed is
// `learner_seed`: a uniform permutation of n options (Fisher-Yates over a SplitMix64 stream seeded from
// the three), the same on every machine and build.
OptionOrder draw_order(std::uint64_t learner_seed, const std::string& question_id, int attempt, int n);

// A learner's seed, drawn once (std::random_device) and kept in progress.json; below 2^53, so that any
// JSON reader holds it exactly.
std::uint64_t new_learner_seed();
inline constexpr std::uint64_t kMaxLearnerSeed = (std::uint64_t{1} << 53) - 1;

// "cadb": the ids' letters in display order, as progress.json and --json keep an order.
std::string order_letters(const OptionOrder& order);
// The order `letters` names, when it is a permutation of the first n letters; else nullopt.
std::optional<OptionOrder> parse_order(const std::string& letters, int n);

// The position (0 for 'a') at which option `id` is shown; -1 when it is not in the order.
int shown_at(const OptionOrder& order, int id);

}  // namespace runner
