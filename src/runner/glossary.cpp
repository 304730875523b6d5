// The glossary: reading glossary.yaml, and finding its terms in a text (runner/glossary.h).
#include "runner/glossary.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <ostream>

#include <fmt/format.h>

#include "lab/text.h"
#include "runner/yaml_file.h"

namespace runner {

const std::vector<std::string> kGlossaryKeys = {"sources", "terms"};
const std::vector<std::string> kTermKeys = {"name", "variants", "definition", "cite", "source", "exact_case"};

namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// `text` with every run of blanks (line breaks and indents of a wrapped line) as one space, and without
// colour codes ("\x1b[1m"), so that a term in bold is found like any other.
std::string one_line(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      const size_t end = text.find_first_not_of("0123456789;", i + 2);
      if (end != std::string_view::npos && text[end] == 'm') {
        i = end;
        continue;
      }
    }
    const bool blank = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!blank)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  return out;
}

bool same(char a, char b, bool exact_case) {
  return exact_case ? a == b : lower(a) == lower(b);
}

// Where `form` first occurs in `text` as a whole word, a plural "s" or "es" allowed; npos when nowhere. A
// form that starts or ends with a character that is not part of a word ("+inf") needs no boundary there.
size_t find_word(const std::string& text, const std::string& form, bool exact_case) {
  if (form.empty()) return std::string::npos;
  const auto boundary = [&](size_t i) { return i >= text.size() || !is_word_char(text[i]); };
  for (size_t at = 0; at + form.size() <= text.size(); ++at) {
    if (at > 0 && is_word_char(form.front()) && is_word_char(text[at - 1])) continue;
    size_t k = 0;
    while (k < form.size() && same(text[at + k], form[k], exact_case)) ++k;
    if (k < form.size()) continue;
    const size_t end = at + form.size();
    if (!is_word_char(form.back()) || boundary(end)) return at;
    if (end < text.size() && lower(text[end]) == 's' && boundary(end + 1)) return at;
    if (end + 1 < text.size() && lower(text[end]) == 'e' && lower(text[end + 1]) == 's' && boundary(end + 2))
      return at;
  }
  return std::string::npos;
}

constexpr DataKind kGlossaryFile{"glossary file", "sources and terms", 1 << 20};

// A citation of `sources:`, and whether a term cites it (one that none does is refused).
struct Source {
  std::string text;
  YAML::Mark mark;
  bool cited = false;
};
using Sources = std::map<std::string, Source>;

// A name or variant already given, by its lower case: no two terms may share one.
struct Form {
  size_t term;
  std::string text;
  int line;
};

Sources read_sources(const YamlFile& v, const YAML::Node& root) {
  Sources sources;
  const YAML::Node map = root["sources"];
  if (!map) return sources;
  if (!map.IsMap()) v.fail(map.Mark(), "sources", "must map names to citations");
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string name = v.text(it->first, "sources");
    const auto [first, inserted] =
        sources.emplace(name, Source{v.line(it->second, "sources." + name), it->first.Mark()});
    if (!inserted)
      v.fail(it->first.Mark(), "sources." + name,
             fmt::format("given twice (first at line {})", first->second.mark.line + 1));
  }
  return sources;
}

std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// `form` (a name or variant of term `term`) is no other term's, nor given twice in this one; the same word
// in another case is the same term's ("AVX512", "avx512").
void add_form(const YamlFile& v, const YAML::Node& node, const std::string& form, const std::string& field,
              size_t term, const std::vector<Term>& terms, std::map<std::string, Form>& forms) {
  const auto [it, inserted] = forms.emplace(lowered(form), Form{term, form, node.Mark().line + 1});
  if (inserted) return;
  if (it->second.term != term)
    v.fail(node.Mark(), field,
           fmt::format("{} is already a form of the term {} (line {})", lab::quote(form),
                       lab::quote(terms[it->second.term].name), it->second.line));
  if (it->second.text == form)
    v.fail(node.Mark(), field,
           fmt::format("{} given twice (first at line {})", lab::quote(form), it->second.line));
}

std::vector<std::string> read_variants(const YamlFile& v, const YAML::Node& node, const std::string& at) {
  std::vector<std::string> variants;
  if (!node) return variants;
  if (!node.IsSequence())
    v.fail(node.Mark(), at, std::string("must be a list of strings, got ") + kind_of(node));
  for (size_t k = 0; k < node.size(); ++k) variants.push_back(v.line(node[k], fmt::format("{}[{}]", at, k)));
  return variants;
}

// The term's citation: a name in `sources` (cite), its own (source), or none.
std::string read_source(const YamlFile& v, const YAML::Node& node, const std::string& at, Sources& sources) {
  if (node["cite"] && node["source"]) v.fail(node["source"].Mark(), at, "give cite or source, not both");
  if (node["source"]) return v.line(node, "source", at + ".source");
  if (!node["cite"]) return "";
  const std::string name = v.text(node, "cite", at + ".cite");
  const auto it = sources.find(name);
  if (it == sources.end()) {
    std::vector<std::string> known;
    for (const auto& [k, source] : sources) known.push_back(k);
    v.fail(node["cite"].Mark(), at + ".cite",
           fmt::format("no source named {} in sources (known: {})", lab::quote(name), joined(known)));
  }
  it->second.cited = true;
  return it->second.text;
}

// terms[i]; `terms` holds the terms before it, `forms` their names and variants.
Term read_term(const YamlFile& v, const YAML::Node& node, const std::vector<Term>& terms, Sources& sources,
               std::map<std::string, Form>& forms) {
  const size_t i = terms.size();
  const std::string at = fmt::format("terms[{}]", i);
  v.mapping(node, kTermKeys, at, "a mapping with name and definition");
  Term t;
  t.name = v.line(node, "name", at + ".name");
  add_form(v, node["name"], t.name, at + ".name", i, terms, forms);
  t.variants = read_variants(v, node["variants"], at + ".variants");
  for (size_t k = 0; k < t.variants.size(); ++k)
    add_form(v, node["variants"][k], t.variants[k], fmt::format("{}.variants[{}]", at, k), i, terms, forms);
  // Each printed as one line, "name: definition": a line break or a tab in one would come out raw.
  t.definition = v.line(node, "definition", at + ".definition");
  t.source = read_source(v, node, at, sources);
  if (node["exact_case"]) t.exact_case = v.boolean(node["exact_case"], at + ".exact_case");
  return t;
}

}  // namespace

Glossary::Glossary(std::vector<Term> terms) : terms_(std::move(terms)) {
  const auto key = [](std::string s) {  // "_scaled_mm" sorts under s
    s.erase(0, s.find_first_not_of("_:."));
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  std::stable_sort(terms_.begin(), terms_.end(),
                   [&](const Term& a, const Term& b) { return key(a.name) < key(b.name); });
}

const Term* Glossary::find(std::string_view word) const {
  const std::string w = one_line(word);
  for (const auto& t : terms_) {
    const auto matches = [&](const std::string& form) {  // the whole of `w`, with a plural at most
      if (w.size() < form.size() || find_word(w, form, t.exact_case) != 0) return false;
      const std::string rest = w.substr(form.size());
      return rest.empty() || ((rest == "s" || rest == "es") && is_word_char(form.back()));
    };
    if (matches(t.name) || std::any_of(t.variants.begin(), t.variants.end(), matches)) return &t;
  }
  return nullptr;
}

std::vector<const Term*> Glossary::terms_in(std::string_view text) const {
  const std::string flat = one_line(text);
  std::vector<std::pair<size_t, const Term*>> found;
  for (const auto& t : terms_) {
    size_t first = find_word(flat, t.name, t.exact_case);
    for (const auto& v : t.variants) first = std::min(first, find_word(flat, v, t.exact_case));
    if (first != std::string::npos) found.emplace_back(first, &t);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Term*> terms;
  for (const auto& [at, t] : found) terms.push_back(t);
  return terms;
}

std::vector<const Term*> Glossary::new_terms(std::string_view text, std::set<std::string>& glossed) const {
  std::vector<const Term*> fresh;
  for (const Term* t : terms_in(text))
    if (glossed.insert(t->name).second) fresh.push_back(t);
  return fresh;
}

Glossary load_glossary(const std::string& path) {
  return parse_glossary(read_data_file(path, kGlossaryFile), path);
}

Glossary parse_glossary(std::string text, const std::string& name) {
  const YamlFile v(std::move(text), name, kGlossaryFile);
  const YAML::Node& root = v.root(kGlossaryKeys);
  Sources sources = read_sources(v, root);
  const YAML::Node list = v.list(v.required(root, "terms", "terms"), "terms");
  std::vector<Term> terms;
  std::map<std::string, Form> forms;
  for (size_t i = 0; i < list.size(); ++i) terms.push_back(read_term(v, list[i], terms, sources, forms));
  for (const auto& [source, entry] : sources)
    if (!entry.cited) v.fail(entry.mark, "sources." + source, "no term cites it");
  return Glossary(std::move(terms));
}

std::string format_glosses(const std::vector<const Term*>& terms, size_t width) {
  std::string out;
  for (const Term* t : terms)
    for (const auto& line : lab::wrap_lines(t->name + ": " + t->definition, width, "  ", "      "))
      out += line + "\n";
  return out;
}

void print_glossary(std::ostream& out, const Glossary& glossary, size_t width, bool color) {
  const lab::Style style{color};
  out << style.bold("Glossary") << "\n";
  for (const auto& line :
       lab::wrap_lines("Every term the labs use, with a one-line definition and where it comes "
                       "from. The quiz glosses each the first time a lab shows it.",
                       width))
    out << line << "\n";
  for (const auto& t : glossary.terms()) {
    out << "\n";
    const auto lines = lab::wrap_lines(t.definition, width, t.name + ": ", "    ");
    for (size_t k = 0; k < lines.size(); ++k)
      out << (k == 0 ? style.bold(t.name + ":") + lines[k].substr(t.name.size() + 1) : lines[k]) << "\n";
    if (!t.source.empty())
      for (const auto& line : lab::wrap_lines(t.source, width, "    source: ", "      "))
        out << style.dim(line) << "\n";
  }
}

}  // namespace runner
