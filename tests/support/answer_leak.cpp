#include "support/answer_leak.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace test_support {
namespace {

// Function words, and words every option of a question shares in form ("it", "because").
const std::set<std::string> kStopWords = {
    "a",    "an",    "the",  "and",   "or",    "of",     "to",    "in",    "on",    "for",  "with",   "by",
    "is",   "are",   "be",   "it",    "its",   "that",   "this",  "which", "so",    "as",   "at",     "from",
    "than", "then",  "into", "when",  "where", "no",     "not",   "only",  "every", "each", "one",    "any",
    "all",  "per",   "can",  "could", "would", "should", "must",  "do",    "doe",   "more", "less",   "very",
    "may",  "many",  "much", "befor", "after", "dur",    "out",   "off",   "up",    "use",  "becaus", "why",
    "what", "how",   "will", "their", "there", "these",  "those", "them",  "they",  "we",   "you",    "your",
    "our",  "whose", "has",  "have",  "make",  "same",   "other", "own",   "just",  "also", "but",    "if"};

std::string stem(std::string w) {
  for (const char* suffix : {"ing", "ed", "es", "s"}) {
    const std::string s(suffix);
    if (w.size() > s.size() + 3 && w.compare(w.size() - s.size(), s.size(), s) == 0)
      return w.substr(0, w.size() - s.size());
  }
  return w;
}

}  // namespace

std::vector<std::string> leak_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(stem(word));
    word.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\'' && i + 1 < text.size() && text[i + 1] == 's') {  // "FP16's" -> "fp16"
      flush();
      ++i;
    } else if (std::isalnum(c)) {
      word += static_cast<char>(std::tolower(c));
    } else {
      flush();
    }
  }
  flush();
  return words;
}

LeakScore leak_score(const std::string& shown, const std::string& prompt,
                     const std::vector<std::string>& options, int answer) {
  const std::vector<std::string> shown_words = leak_words(shown);
  const std::set<std::string> in_shown(shown_words.begin(), shown_words.end());
  std::set<std::string> elsewhere;  // the prompt's words and the wrong options'
  for (const auto& w : leak_words(prompt)) elsewhere.insert(w);
  for (size_t i = 0; i < options.size(); ++i)
    if (static_cast<int>(i) != answer)
      for (const auto& w : leak_words(options[i])) elsewhere.insert(w);
  LeakScore score;
  const std::vector<std::string> option = leak_words(options.at(static_cast<size_t>(answer)));
  for (const auto& w : option) {
    if (w.size() < 2 || kStopWords.count(w) || elsewhere.count(w)) continue;
    if (std::find(score.distinctive.begin(), score.distinctive.end(), w) != score.distinctive.end()) continue;
    score.distinctive.push_back(w);
    if (in_shown.count(w)) score.found.push_back(w);
  }
  // The longest run of four or more of the option's consecutive words that the shown text holds in order.
  size_t best = 3;
  for (size_t start = 0; start < option.size(); ++start) {
    for (size_t len = option.size() - start; len > best; --len) {
      const auto first = option.begin() + static_cast<std::ptrdiff_t>(start);
      const auto last = first + static_cast<std::ptrdiff_t>(len);
      if (std::search(shown_words.begin(), shown_words.end(), first, last) == shown_words.end()) continue;
      best = len;
      score.run.clear();
      for (auto it = first; it != last; ++it) score.run += (score.run.empty() ? "" : " ") + *it;
      break;
    }
  }
  return score;
}

}  // namespace test_support
