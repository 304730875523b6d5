// Names derived from a lab's declaration, and finding a lab by any of them.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "lab/catalog.h"

namespace lab {
namespace {

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Levenshtein distance, for names of a few dozen characters.
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string LabDecl::stem() const {
  return fmt::format("{:02d}_{}", number, underscored(id));
}
std::string LabDecl::folder() const {
  return "labs/" + stem();
}
std::string LabDecl::source() const {
  return folder() + "/lab.cpp";
}
std::string LabDecl::amp_source() const {
  return folder() + "/amp.cpp";
}
std::string LabDecl::executable() const {
  return "lab" + stem();
}

const LabDecl* find_decl(std::string_view name) {
  const std::string wanted = lowered(name);
  for (const auto& d : catalog()) {
    if (wanted == d.id || wanted == underscored(d.id) || wanted == d.stem() || wanted == d.executable() ||
        wanted == std::to_string(d.number) || wanted == fmt::format("{:02d}", d.number))
      return &d;
  }
  return nullptr;
}

const LabDecl* closest_decl(std::string_view name) {
  const std::string wanted = lowered(name);
  const LabDecl* best = nullptr;
  size_t best_distance = 0;
  for (const auto& d : catalog()) {
    for (const std::string& candidate : {d.id, d.stem()}) {
      const size_t dist = distance(wanted, candidate);
      if (!best || dist < best_distance) {
        best = &d;
        best_distance = dist;
      }
    }
  }
  // Close: at most a third of the name's letters wrong (a typo or two, not another word).
  return best && best_distance * 3 <= std::max<size_t>(wanted.size(), 3) ? best : nullptr;
}

std::string labs_taking_dtype() {
  std::vector<std::string> numbers;
  for (const auto& decl : catalog())
    if (decl.takes_dtype()) numbers.push_back(fmt::format("{:02d}", decl.number));
  std::string out;
  for (size_t i = 0; i < numbers.size(); ++i)
    out += (i == 0 ? "" : i + 1 == numbers.size() ? " and " : ", ") + numbers[i];
  return out.empty() ? "none" : out;
}

}  // namespace lab
