// The glossary: every term the labs use, each with a one-line definition and where it comes from, read from
// glossary.yaml (beside quiz.yaml: runner/data_files.h). The walk glosses a term in the measured part the
// first time a lab's output uses it; `amp-lab glossary` lists them all. A gloss says what a term is, never
// why a quiz answer holds: "loss scale: the factor the loss is multiplied by before backward", not "... so
// that fp16 gradients do not underflow".
#pragma once

#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace runner {

struct Term {
  std::string name;                   // as the gloss shows it: "loss scale"
  std::vector<std::string> variants;  // other forms a text may use: "loss scaling" (a plural 's' is implied)
  std::string definition;             // one line, neutral
  std::string source;       // a paper, PyTorch's or NVIDIA's docs (a URL where there is one); may be ""
  bool exact_case = false;  // matched only as written ("ZeRO": "zero" is an English word)
};

class Glossary {
 public:
  Glossary() = default;  // no terms: nothing is glossed
  // Sorted by name (case-insensitively, a leading "_" ignored).
  explicit Glossary(std::vector<Term> terms);

  // Every term, sorted by name. A Term* from this glossary stays valid while it lives (not across a copy).
  const std::vector<Term>& terms() const { return terms_; }

  // The term whose name or variant is `word` (as terms_in() would match it), or nullptr.
  const Term* find(std::string_view word) const;

  // The terms `text` uses, each once, in the order they first appear. A name or variant matches as a whole
  // word (not inside a longer word or identifier: "inf" is not in "information", "bf16" not in
  // "avx512_bf16"), case-insensitively unless the term is exact_case, with an optional plural "s" or "es",
  // across line breaks ("loss\n  scale") and colour codes (a report rendered with colour).
  std::vector<const Term*> terms_in(std::string_view text) const;

  // The terms `text` uses that are not yet in `glossed` (the names of the terms already glossed in this
  // walk), in order of first appearance; their names are added to `glossed`.
  std::vector<const Term*> new_terms(std::string_view text, std::set<std::string>& glossed) const;

 private:
  std::vector<Term> terms_;
};

// The keys glossary.yaml may hold.
extern const std::vector<std::string> kGlossaryKeys;  // sources, terms
extern const std::vector<std::string> kTermKeys;      // name, variants, definition, cite, source, exact_case

// Loads and validates glossary.yaml with the data files' loader (runner/yaml_file.h, as quiz.yaml is):
// `sources` (optional) maps a name to a citation, each cited by some term; `terms`, a non-empty list, each
// a mapping with a name, a one-line definition, optional variants (a list of strings), at most one of
// `cite` (a name in `sources`) and `source` (its own citation), and exact_case (true or false). No name or
// variant may belong to two terms (case-insensitively), nor be given twice in one. Every error is one
// DataError line "file:line:column: field: what".
Glossary load_glossary(const std::string& path);
// The same for text already in memory; `name` stands for the file in messages.
Glossary parse_glossary(std::string text, const std::string& name);

// The glosses of `terms` as the walk prints them, one term each: "  name: definition", wrapped at `width`
// columns (0: one line each) with later lines indented under the definition. Empty for no terms.
std::string format_glosses(const std::vector<const Term*>& terms, size_t width);

// `amp-lab glossary`: a heading, then every term with its definition and its source, at `width` columns.
void print_glossary(std::ostream& out, const Glossary& glossary, size_t width, bool color = false);

}  // namespace runner
