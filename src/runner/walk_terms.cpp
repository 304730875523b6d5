// The terms a question's screen glosses before its prompt, and those shown in earlier walks
// (runner/walk_terms.h).
#include "runner/walk_terms.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runner/glossary.h"
#include "runner/progress.h"

namespace runner {
namespace {

constexpr const char* kTermsShownKey = "terms_shown";  // the progress file's top-level key

size_t newlines_in(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// "More terms (t defines them): amax, E4M3", wrapped; "" for none.
std::string more_terms_line(const std::vector<const Term*>& terms, size_t width, const lab::Style& style) {
  if (terms.empty()) return "";
  std::string names;
  for (const Term* t : terms) names += (names.empty() ? "" : ", ") + t->name;
  std::string text;
  for (const auto& line : lab::wrap_lines("More terms (t defines them): " + names, width, "", "  "))
    text += style.dim(line) + "\n";
  return text;
}

bool lowered_has(std::string text, std::string word) {
  for (auto* s : {&text, &word})
    std::transform(s->begin(), s->end(), s->begin(), [](unsigned char c) { return std::tolower(c); });
  return text.find(word) != std::string::npos;
}

}  // namespace

std::vector<const Term*> question_terms(const Glossary& glossary, const Question& q,
                                        const std::string& shown) {
  std::vector<const Term*> terms = glossary.terms_in(q.prompt + "\n" + shown);
  std::string options;
  for (const auto& o : q.options) options += o + "\n";
  std::vector<const Term*> only_options;
  for (const Term* t : glossary.terms_in(options))
    if (std::find(terms.begin(), terms.end(), t) == terms.end()) only_options.push_back(t);
  // The glossary's own vector holds its terms in its order: their addresses sort the same way.
  std::sort(only_options.begin(), only_options.end());
  terms.insert(terms.end(), only_options.begin(), only_options.end());
  return terms;
}

ScreenGlosses glosses_before_prompt(const Glossary& glossary, const Question& q, const std::string& shown,
                                    const std::set<std::string>& glossed, size_t width, size_t room,
                                    bool name_rest, const lab::Style& style, bool shown_as_own) {
  const std::vector<const Term*> own = question_terms(glossary, q, "");  // the prompt's and the options'
  std::vector<const Term*> lab_terms, own_terms;                         // not glossed yet
  for (const Term* t : question_terms(glossary, q, shown)) {
    if (glossed.count(t->name)) continue;
    (std::find(own.begin(), own.end(), t) != own.end() ? own_terms : lab_terms).push_back(t);
  }
  // A term only the options use is glossed when two options or more use it: a gloss of a term of one option
  // alone would point at that option (t shows it all the same).
  const std::vector<const Term*> in_text = glossary.terms_in(q.prompt + "\n" + (shown_as_own ? shown : ""));
  std::erase_if(own_terms, [&](const Term* t) {
    if (std::find(in_text.begin(), in_text.end(), t) != in_text.end()) return false;
    size_t options_using = 0;
    for (const auto& option : q.options) {
      // By its name, as the gloss shows it: "custom_fwd" would point at the option that names it, though
      // another uses its variant custom_bwd.
      options_using += !glossary.terms_in(option).empty() && Glossary({*t}).terms_in(option).size() == 1 &&
                       lowered_has(option, t->name);
    }
    // Not the question's own: a term the lab's text shows is one of the lab's terms.
    if (options_using < 2 && !shown_as_own && lowered_has(shown, t->name)) lab_terms.push_back(t);
    return options_using < 2;
  });
  // The first `k` of the lab's terms glossed with the question's own, and the line naming the rest.
  const auto layout = [&](size_t k) {
    ScreenGlosses g;
    std::vector<const Term*> terms(lab_terms.begin(), lab_terms.begin() + static_cast<std::ptrdiff_t>(k));
    terms.insert(terms.end(), own_terms.begin(), own_terms.end());
    if (!terms.empty()) g.text = style.dim("Terms:") + "\n" + format_glosses(terms, width);
    const std::vector<const Term*> rest(lab_terms.begin() + static_cast<std::ptrdiff_t>(k), lab_terms.end());
    if (name_rest) g.text += more_terms_line(rest, width, style);
    for (const Term* t : terms) g.glossed.push_back(t->name);
    g.all = rest.empty();
    g.rows = newlines_in(g.text);
    return g;
  };
  size_t fit = lab_terms.size();
  while (fit > 0 && layout(fit).rows > room) --fit;
  return layout(fit);
}

std::set<std::string> terms_shown_before(ProgressStore* store) {
  std::set<std::string> names;
  if (!store) return names;
  const Progress p = store->load();
  const auto it = p.other.find(kTermsShownKey);
  if (it == p.other.end() || !it->is_array()) return names;
  for (const auto& name : *it)
    if (name.is_string()) names.insert(name.get<std::string>());
  return names;
}

void remember_terms_shown(ProgressStore* store, const std::set<std::string>& shown) {
  if (!store) return;
  store->update([&](Progress& p) {
    std::set<std::string> all = shown;
    if (const auto it = p.other.find(kTermsShownKey); it != p.other.end() && it->is_array())
      for (const auto& name : *it)
        if (name.is_string()) all.insert(name.get<std::string>());
    p.other[kTermsShownKey] = all;  // a JSON list of the names, sorted
  });
}

}  // namespace runner
