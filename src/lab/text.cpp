#include "lab/text.h"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

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
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));
  // Numbers line up on the right, words on the left: a column is numeric when every cell starts like a
  // number.
  std::vector<bool> numeric(columns.size(), !rows.empty());
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < numeric.size(); ++i)
      numeric[i] =
          numeric[i] && (row[i].empty() || std::isdigit(static_cast<unsigned char>(row[i][0])) ||
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
  if (const char* term = std::getenv("TERM"); term && std::string_view(term) == "dumb") return false;
  return isatty(STDOUT_FILENO) != 0;
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when the byte there does not start one.
size_t utf8_length(std::string_view s, size_t i, char32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  size_t n;
  char32_t cp, min;
  if ((b0 & 0xE0) == 0xC0)
    n = 2, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0)
    n = 3, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0)
    n = 4, cp = b0 & 0x07, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return n;
}

// Characters a terminal acts on instead of printing: C0 and C1 controls, DEL, and the bidirectional
// overrides and isolates that reorder what follows them.
bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string escaped(std::string_view input, size_t max_glyphs, bool escape_backslash, bool* cut) {
  std::string out;
  size_t glyphs = 0;
  *cut = false;
  for (size_t i = 0; i < input.size();) {
    char32_t cp = 0;
    const size_t n = utf8_length(input, i, &cp);
    std::string piece;
    if (n == 0)
      piece = fmt::format("\\x{:02x}", static_cast<unsigned char>(input[i]));
    else if (cp == '\n')
      piece = "\\n";
    else if (cp == '\r')
      piece = "\\r";
    else if (cp == '\t')
      piece = "\\t";
    else if (cp == '\\' && escape_backslash)
      piece = "\\\\";
    else if (is_control(cp))
      piece = cp < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(cp))
                        : fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    else
      piece = std::string(input.substr(i, n));
    const size_t width = n == 0 || piece.size() > n ? piece.size() : 1;
    if (glyphs + width > max_glyphs) {
      *cut = true;
      break;
    }
    out += piece;
    glyphs += width;
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::string size_note(size_t bytes) {
  return fmt::format("({} bytes)", bytes);
}

}  // namespace

std::string quote(std::string_view input, size_t max_glyphs) {
  bool cut = false;
  const std::string body = escaped(input, max_glyphs, /*escape_backslash=*/true, &cut);
  return cut ? "'" + body + "...' " + size_note(input.size()) : "'" + body + "'";
}

std::string escape(std::string_view input, size_t max_glyphs) {
  bool cut = false;
  const std::string body = escaped(input, max_glyphs, /*escape_backslash=*/true, &cut);
  return cut ? body + "... " + size_note(input.size()) : body;
}

std::string safe_line(std::string_view message, size_t max_glyphs) {
  bool cut = false;
  const std::string body = escaped(message, max_glyphs, /*escape_backslash=*/false, &cut);
  return cut ? body + "... " + size_note(message.size()) : body;
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t n = utf8_length(s, i, &cp);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string percent(double share, int decimals) {
  return fmt::format("{:.{}f}%", share * 100.0, decimals);
}
std::string sci(double value, int digits) {
  return fmt::format("{:.{}e}", value, std::max(0, digits - 1));
}
std::string num(double value, int digits) {
  return fmt::format("{:.{}g}", value, digits);
}
std::string count_of(long long k, long long n) {
  return fmt::format("{} of {}", k, n);
}

}  // namespace lab
