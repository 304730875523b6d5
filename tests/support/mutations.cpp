// Loading and applying the exercises' kept mutations (support/mutations.h).
#include "support/mutations.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "runner/yaml_file.h"

namespace test_support {
namespace {

// The exact text of an edit's field: a string (an empty one only for `with`), nothing dropped.
std::string exact(const runner::YamlFile& file, const YAML::Node& edit, const char* key,
                  const std::string& field, bool may_be_empty) {
  const YAML::Node node = file.required(edit, key, field);
  if (!node.IsScalar())
    file.fail(node.Mark(), field, std::string("must be a string, got ") + runner::kind_of(node));
  if (node.Scalar().empty() && !may_be_empty) file.fail(node.Mark(), field, "must not be empty");
  return node.Scalar();
}

// Where each edit's text starts in `source`, in the edits' order; npos for one not found exactly once.
std::vector<size_t> positions(const Mutation& m, const std::string& source) {
  std::vector<size_t> at;
  for (const auto& e : m.edits) {
    const size_t first = source.find(e.replace);
    const bool once = first != std::string::npos && source.find(e.replace, first + 1) == std::string::npos;
    at.push_back(once ? first : std::string::npos);
  }
  return at;
}

}  // namespace

std::vector<Mutation> load_mutations(const std::string& path) {
  const runner::DataKind kind{"mutations file", "mutations", 1 << 20};
  const runner::YamlFile file(runner::read_data_file(path, kind), path, kind);
  std::vector<Mutation> out;
  const YAML::Node list =
      file.list(file.required(file.root({"mutations"}), "mutations", "mutations"), "mutations");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node m = list[i];
    const std::string field = fmt::format("mutations[{}]", i + 1);
    file.mapping(m, {"id", "mistake", "hint", "pass", "edits"}, field,
                 "a mapping with id, mistake, hint or pass, and edits");
    Mutation mutation{.id = file.text(m, "id", field + ".id"),
                      .mistake = file.text(m, "mistake", field + ".mistake")};
    for (const auto& other : out)
      if (other.id == mutation.id) file.fail(m["id"].Mark(), field + ".id", "is given twice: " + mutation.id);
    if (m["hint"] && m["pass"]) file.fail(m.Mark(), field, "has both a hint and pass");
    if (m["hint"]) {
      mutation.hint = file.text(m, "hint", field + ".hint");
    } else if (!m["pass"] || !file.boolean(m["pass"], field + ".pass")) {
      file.fail(m.Mark(), field, "needs a hint (a wrong solution) or pass: true (a correct variant)");
    }
    const YAML::Node edits = file.list(file.required(m, "edits", field + ".edits"), field + ".edits");
    for (size_t k = 0; k < edits.size(); ++k) {
      const std::string at = fmt::format("{}.edits[{}]", field, k + 1);
      file.mapping(edits[k], {"replace", "with"}, at, "a mapping with replace and with");
      mutation.edits.push_back({exact(file, edits[k], "replace", at + ".replace", /*may_be_empty=*/false),
                                exact(file, edits[k], "with", at + ".with", /*may_be_empty=*/true)});
    }
    out.push_back(std::move(mutation));
  }
  return out;
}

std::string mutation_problem(const Mutation& m, const std::string& source) {
  const std::vector<size_t> at = positions(m, source);
  for (size_t k = 0; k < at.size(); ++k) {
    if (at[k] != std::string::npos) continue;
    const size_t n = [&] {
      size_t count = 0;
      for (size_t p = source.find(m.edits[k].replace); p != std::string::npos;
           p = source.find(m.edits[k].replace, p + 1))
        ++count;
      return count;
    }();
    return fmt::format("{}: edit {}'s text occurs {} times, not once: {}", m.id, k + 1, n,
                       m.edits[k].replace.substr(0, 80));
  }
  for (size_t a = 0; a < at.size(); ++a)
    for (size_t b = 0; b < at.size(); ++b)
      if (a != b && at[a] <= at[b] && at[b] < at[a] + m.edits[a].replace.size())
        return fmt::format("{}: edits {} and {} overlap", m.id, a + 1, b + 1);
  return "";
}

std::string apply_mutation(const Mutation& m, const std::string& source) {
  if (std::string why = mutation_problem(m, source); !why.empty()) throw std::invalid_argument(why);
  const std::vector<size_t> at = positions(m, source);
  std::vector<size_t> order(at.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  std::string out;
  size_t done = 0;
  for (const size_t k : order) {
    out += source.substr(done, at[k] - done) + m.edits[k].with;
    done = at[k] + m.edits[k].replace.size();
  }
  return out + source.substr(done);
}

}  // namespace test_support
