// Which terms a question's screen glosses before its prompt, within the rows the screen has, and which
// terms the learner has been shown already (in this walk, and in earlier walks through the saved
// progress). A term is glossed once: the basic ones (fp16, dtype, backward ...) would otherwise crowd every
// screen. The question's own terms, its prompt's and every option's, are always glossed (all four options
// alike, so that no gloss points at one); the lab's come first and, when they do not all fit, the rest are
// named on one line for the t key.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "lab/text.h"
#include "runner/quiz.h"

namespace runner {

class Glossary;
class ProgressStore;
struct Term;

// The terms of a question's screen, for the t key: those `shown` (the lab's measured part) and its prompt
// use, in order of first appearance, then those only its options use, in the glossary's order (an order
// that says nothing about which option uses which, nor where an option stands).
std::vector<const Term*> question_terms(const Glossary& glossary, const Question& q,
                                        const std::string& shown);

// The glosses a question's screen shows before its prompt, at `width` columns: the terms of
// question_terms() not in `glossed` (the names shown so far), the lab's first and the question's own last.
// All of them when they fit in `room` rows; else the question's own and as many of the lab's as fit, in
// order, and with `name_rest` a last line that names the others (for the t key). Above `room` only when
// the question's own terms alone need more. A term of fewer than two options counts as the question's own
// when the lab's text shows it too; with `shown_as_lab` false it counts as the lab's (named, not glossed,
// when it does not fit): a screen's last resort.
struct ScreenGlosses {
  std::string text;                  // "Terms:", a gloss a line, then the line naming the rest; "" for none
  std::vector<std::string> glossed;  // the names of the terms glossed
  bool all = true;                   // every term not shown before is glossed
  size_t rows = 0;                   // the lines of `text`
};
ScreenGlosses glosses_before_prompt(const Glossary& glossary, const Question& q, const std::string& shown,
                                    const std::set<std::string>& glossed, size_t width, size_t room,
                                    bool name_rest, const lab::Style& style, bool shown_as_own = true);

// The names of the terms glossed in earlier walks, kept in the progress file under "terms_shown" (a list of
// names); empty without a store, or when the key is missing or not such a list.
std::set<std::string> terms_shown_before(ProgressStore* store);
// Saves `shown` as the progress file's "terms_shown", with the names saved there already (another walk's).
void remember_terms_shown(ProgressStore* store, const std::set<std::string>& shown);

}  // namespace runner
