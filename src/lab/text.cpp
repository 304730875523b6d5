#include "lab/text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>

#include "lab/report.h"

// The fmt headers must be the ones of the libfmt we link (cmake/AmpLabFmt.cmake explains the trap).
static_assert(FMT_VERSION == AMP_LAB_FMT_VERSION, "fmt headers do not match the linked libfmt");

namespace lab {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count bytes that start a UTF-8 sequence
  return n;
}

std::string pad_right(const std::string& s, size_t width) {
  size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string pad_left(const std::string& s, size_t width) {
  size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::vector<std::string> format_table(const std::vector<std::string>& columns,
                                      const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size(), 0);
  for (size_t i = 0; i < columns.size(); ++i) width[i] = display_width(columns[i]);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  // Numbers line up on the right, words on the left: a column is numeric when every cell starts like a number.
  std::vector<bool> numeric(columns.size(), !rows.empty());
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < numeric.size(); ++i)
      numeric[i] = numeric[i] && (row[i].empty() || std::isdigit(static_cast<unsigned char>(row[i][0])) ||
                                  ((row[i][0] == '-' || row[i][0] == '+' || row[i][0] == '.') && row[i].size() > 1));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += "  ";
      out += i > 0 && numeric[i] ? pad_left(cells[i], width[i]) : pad_right(cells[i], width[i]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::vector<std::string> out{line(columns)};
  size_t total = 0;
  for (size_t w : width) total += w;
  out.push_back(std::string(total + 2 * (width.size() - 1), '-'));
  for (const auto& row : rows) out.push_back(line(row));
  return out;
}

std::string wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out, word;
  size_t column = 0;
  std::istringstream words(text);
  while (words >> word) {
    const size_t w = display_width(word);
    if (column > 0 && column + 1 + w > width) {
      out += "\n" + indent;
      column = display_width(indent);
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    out += word;
    column += w;
  }
  return out;
}

bool want_color(bool no_color_flag) {
  if (no_color_flag) return false;
  if (const char* nc = std::getenv("NO_COLOR"); nc && *nc) return false;
  return isatty(STDOUT_FILENO) != 0;
}

std::string percent(double share, int decimals) { return fmt::format("{:.{}f}%", share * 100.0, decimals); }
std::string sci(double value, int digits) { return fmt::format("{:.{}e}", value, std::max(0, digits - 1)); }
std::string num(double value, int digits) { return fmt::format("{:.{}g}", value, digits); }

}  // namespace lab
