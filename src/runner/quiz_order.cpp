#include "runner/quiz_order.h"

#include <algorithm>
#include <random>

namespace runner {
namespace {

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
// a fixed function, unlike std::uniform_int_distribution, whose draws differ between standard libraries.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// FNV-1a, 64-bit: the question's id as a number.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

// A draw in [0, bound), without the modulo's bias (rejection of the top partial range).
std::uint64_t below(std::uint64_t bound, std::uint64_t& state) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  for (;;)
    if (const std::uint64_t x = splitmix64(state); x < limit) return x % bound;
}

}  // namespace

OptionOrder file_order(int n) {
  OptionOrder order(static_cast<size_t>(std::max(n, 0)));
  for (int k = 0; k < n; ++k) order[static_cast<size_t>(k)] = k;
  return order;
}

OptionOrder draw_order(std::uint64_t learner_seed, const std::string& question_id, int attempt, int n) {
  // Each input goes through the mixer on its own, so that nearby seeds or attempts give unrelated orders.
  std::uint64_t state = learner_seed;
  state = splitmix64(state) ^ fnv1a(question_id);
  state = splitmix64(state) ^ static_cast<std::uint64_t>(attempt);
  splitmix64(state);
  OptionOrder order = file_order(n);
  for (int k = n - 1; k > 0; --k)
    std::swap(order[static_cast<size_t>(k)],
              order[static_cast<size_t>(below(static_cast<std::uint64_t>(k) + 1, state))]);
  return order;
}

std::uint64_t new_learner_seed() {
  std::random_device device;
  const std::uint64_t high = device(), low = device();
  return ((high << 32) ^ low) & kMaxLearnerSeed;
}

std::string order_letters(const OptionOrder& order) {
  std::string letters;
  for (const int id : order) letters += static_cast<char>('a' + id);
  return letters;
}

std::optional<OptionOrder> parse_order(const std::string& letters, int n) {
  if (static_cast<int>(letters.size()) != n) return std::nullopt;
  OptionOrder order;
  for (const char c : letters) {
    const int id = c - 'a';
    if (id < 0 || id >= n || std::count(order.begin(), order.end(), id)) return std::nullopt;
    order.push_back(id);
  }
  return order;
}

int shown_at(const OptionOrder& order, int id) {
  const auto at = std::find(order.begin(), order.end(), id);
  return at == order.end() ? -1 : static_cast<int>(at - order.begin());
}

}  // namespace runner
