// Does the text shown before a question give its answer away? The measured part of a lab may show what
// the experiment found (the learner answers from it), but not the correct option's own words.
//
// The correct option's distinctive words are its content words (lower-cased, a crude stem, no function
// words) that appear neither in the question's prompt nor in any wrong option: the words that single it
// out. The text gives the answer away when it holds at least half of them, or a run of four or more of
// the option's consecutive words.
#pragma once

#include <string>
#include <vector>

namespace test_support {

struct LeakScore {
  std::vector<std::string> distinctive;  // the correct option's distinctive words
  std::vector<std::string> found;        // those the text holds
  std::string run;                       // the longest run of the option's words (4 or more) found verbatim
  double share() const {
    return distinctive.empty() ? 0.0 : double(found.size()) / double(distinctive.size());
  }
  bool gives_away() const { return share() >= 0.5 || !run.empty(); }
};

// The words of `text` as the score compares them: lower case, letters and digits, a stem without a
// plural or -ing/-ed ending.
std::vector<std::string> leak_words(const std::string& text);

LeakScore leak_score(const std::string& shown, const std::string& prompt,
                     const std::vector<std::string>& options, int answer);

}  // namespace test_support
