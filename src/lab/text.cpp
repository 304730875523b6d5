#include "lab/text.h"

#include <sys/ioctl.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

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

namespace {

// Numbers line up on the right, words on the left: a column is numeric when every cell starts like a
// number.
std::vector<bool> numeric_columns(size_t n, const std::vector<std::vector<std::string>>& rows) {
  std::vector<bool> numeric(n, !rows.empty());
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < numeric.size(); ++i)
      numeric[i] =
          numeric[i] && (row[i].empty() || std::isdigit(static_cast<unsigned char>(row[i][0])) ||
                         ((row[i][0] == '-' || row[i][0] == '+' || row[i][0] == '.') && row[i].size() > 1));
  return numeric;
}

std::string cell(const std::vector<std::string>& row, size_t i) {
  return i < row.size() ? row[i] : "";
}

std::string trimmed_right(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && is_blank(text[i])) ++i;
    const size_t from = i;
    while (i < text.size() && !is_blank(text[i])) ++i;
    if (i > from) words.push_back(text.substr(from, i - from));
  }
  return words;
}

size_t longest_word(const std::string& text) {
  size_t longest = 0;
  for (const auto word : words_of(text)) longest = std::max(longest, display_width(std::string(word)));
  return longest;
}

// A cell in a column `width` glyphs wide.
std::vector<std::string> cell_lines(const std::string& text, size_t width) {
  return wrap_lines(text, width);
}

// The header and every row, each a list of cells.
using Grid = std::vector<std::vector<std::string>>;

// How many lines each cell of column `i` takes at `width`.
std::vector<size_t> column_heights(const Grid& grid, size_t i, size_t width) {
  std::vector<size_t> heights;
  for (const auto& row : grid) heights.push_back(cell_lines(cell(row, i), width).size());
  return heights;
}

// Lines the table takes: each row is as tall as its tallest cell.
size_t grid_height(const std::vector<std::vector<size_t>>& heights, size_t rows) {
  size_t total = 0;
  for (size_t r = 0; r < rows; ++r) {
    size_t tallest = 1;
    for (const auto& column : heights) tallest = std::max(tallest, column[r]);
    total += tallest;
  }
  return total;
}

// Column widths within `room` (the sum of the widths), or empty when the longest words do not fit. One
// glyph at a time from the column where it adds the fewest lines; ties go to the widest column, and the
// first column, which names each row, goes last.
std::vector<size_t> narrowed_widths(const Grid& grid, std::vector<size_t> widths, size_t room) {
  const size_t n = widths.size();
  std::vector<size_t> least(n, 1);
  for (const auto& row : grid)
    for (size_t i = 0; i < n; ++i) least[i] = std::max(least[i], longest_word(cell(row, i)));
  size_t total = 0, least_total = 0;
  for (size_t i = 0; i < n; ++i) total += widths[i], least_total += least[i];
  if (least_total > room) return {};
  std::vector<std::vector<size_t>> heights(n);
  for (size_t i = 0; i < n; ++i) heights[i] = column_heights(grid, i, widths[i]);
  const auto rank = [&](size_t k) { return std::make_tuple(k == 0, SIZE_MAX - widths[k]); };
  for (; total > room; --total) {
    size_t best = n, best_height = 0;
    std::vector<size_t> best_heights;
    for (size_t i = 0; i < n; ++i) {
      if (widths[i] <= least[i]) continue;
      std::vector<size_t> narrower = column_heights(grid, i, widths[i] - 1);
      std::swap(heights[i], narrower);
      const size_t height = grid_height(heights, grid.size());
      std::swap(heights[i], narrower);
      if (best == n || height < best_height || (height == best_height && rank(i) < rank(best)))
        best = i, best_height = height, best_heights = std::move(narrower);
    }
    --widths[best];
    heights[best] = std::move(best_heights);
  }
  return widths;
}

std::vector<std::string> grid_lines(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                                    const std::vector<bool>& numeric) {
  std::vector<std::vector<std::string>> parts(widths.size());
  size_t height = 1;
  for (size_t i = 0; i < widths.size(); ++i) {
    parts[i] = cell_lines(cell(cells, i), widths[i]);
    height = std::max(height, parts[i].size());
  }
  std::vector<std::string> lines;
  for (size_t k = 0; k < height; ++k) {
    std::string out;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string part = k < parts[i].size() ? parts[i][k] : "";
      if (i) out += "  ";
      out += i > 0 && numeric[i] ? pad_left(part, widths[i]) : pad_right(part, widths[i]);
    }
    lines.push_back(trimmed_right(out));
  }
  return lines;
}

std::vector<std::string> laid_out(const std::vector<std::string>& columns,
                                  const std::vector<std::vector<std::string>>& rows,
                                  const std::vector<size_t>& widths) {
  const std::vector<bool> numeric = numeric_columns(columns.size(), rows);
  std::vector<std::string> out = grid_lines(columns, widths, numeric);
  size_t total = 0;
  for (size_t w : widths) total += w;
  out.push_back(std::string(total + 2 * (widths.size() - 1), '-'));
  for (const auto& row : rows)
    for (auto& line : grid_lines(row, widths, numeric)) out.push_back(std::move(line));
  return out;
}

// A row per record: "column: value", the first cell at the left and the others indented under it.
std::vector<std::string> records(const std::vector<std::string>& columns,
                                 const std::vector<std::vector<std::string>>& rows, size_t width) {
  std::vector<std::string> out;
  for (const auto& row : rows)
    for (size_t i = 0; i < columns.size(); ++i) {
      const std::string text = columns[i].empty() ? cell(row, i) : columns[i] + ": " + cell(row, i);
      for (auto& line : wrap_lines(text, width, i == 0 ? "" : "  ", i == 0 ? "    " : "      "))
        out.push_back(std::move(line));
    }
  return out;
}

}  // namespace

std::vector<std::string> format_table(const std::vector<std::string>& columns,
                                      const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(columns.size(), 0);
  for (size_t i = 0; i < columns.size(); ++i) width[i] = display_width(columns[i]);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));
  return laid_out(columns, rows, width);
}

std::vector<std::string> format_table(const std::vector<std::string>& columns,
                                      const std::vector<std::vector<std::string>>& rows, size_t width) {
  std::vector<std::string> natural = format_table(columns, rows);
  if (width == 0 || columns.empty()) return natural;
  width = std::max(width, kMinLayoutWidth);
  size_t widest = 0;
  for (const auto& line : natural) widest = std::max(widest, display_width(line));
  if (widest <= width) return natural;
  Grid grid{columns};
  grid.insert(grid.end(), rows.begin(), rows.end());
  std::vector<size_t> widths(columns.size(), 0);
  for (const auto& row : grid)
    for (size_t i = 0; i < widths.size(); ++i) widths[i] = std::max(widths[i], display_width(cell(row, i)));
  const size_t gaps = 2 * (columns.size() - 1);
  const std::vector<size_t> narrowed =
      width > gaps ? narrowed_widths(grid, widths, width - gaps) : std::vector<size_t>{};
  return narrowed.empty() ? records(columns, rows, width) : laid_out(columns, rows, narrowed);
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

std::vector<std::string> wrap_lines(std::string_view text, size_t width, std::string_view first,
                                    std::string_view rest) {
  std::vector<std::string> lines;
  std::string line(first);
  size_t column = display_width(line);
  // What fits as it is stays as it is: the blanks inside it may align something.
  if (text.find_first_of("\n\r\t") == std::string_view::npos &&
      (width == 0 || column + display_width(std::string(text)) <= width))
    return {trimmed_right(line + std::string(text))};
  bool has_word = false;
  for (const auto word : words_of(text)) {
    const std::string w(word);
    const size_t glyphs = display_width(w);
    if (has_word && width > 0 && column + 1 + glyphs > width) {
      lines.push_back(std::move(line));
      line = std::string(rest);
      column = display_width(line);
      has_word = false;
    }
    if (has_word) line += ' ', ++column;
    line += w;
    column += glyphs;
    has_word = true;
  }
  lines.push_back(trimmed_right(std::move(line)));
  return lines;
}

std::string paragraph(std::string_view lead, std::string_view text, size_t width, size_t hang) {
  const std::string whole = lead.empty() ? std::string(text) : std::string(lead) + " " + std::string(text);
  std::string out;
  for (const auto& line :
       wrap_lines(whole, width == 0 ? 0 : std::max(width, kMinLayoutWidth), "", std::string(hang, ' ')))
    out += (out.empty() ? "" : "\n") + line;
  return out;
}

size_t terminal_width(size_t tty_columns, const char* columns_env) {
  constexpr size_t kMaxWidth = 1000, kDefault = 80;
  size_t width = tty_columns;
  if (width == 0 && columns_env != nullptr) {
    const std::string_view value(columns_env);
    const bool digits = !value.empty() && value.size() <= 6 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) width = std::stoul(std::string(value));
  }
  if (width == 0) width = kDefault;
  return std::clamp(width, kMinLayoutWidth, kMaxWidth);
}

size_t terminal_width() {
  struct winsize size {};
  size_t tty_columns = 0;
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) tty_columns = size.ws_col;
  return terminal_width(tty_columns, std::getenv("COLUMNS"));
}

size_t terminal_rows() {
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0)
    return size.ws_row;
  const char* lines = std::getenv("LINES");
  const long n = lines ? std::strtol(lines, nullptr, 10) : 0;
  // A pipe or a file with no LINES has no screen to fit: nothing is left out to make room.
  if (!lines && !::isatty(STDOUT_FILENO)) return kUnlimitedRows;
  return n >= 10 && n <= 1000 ? static_cast<size_t>(n) : 40;
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

std::string character_at(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  const std::string_view whole = s.substr(i, n);
  return std::string(whole.size() == n && invalid_utf8_at(whole) == std::string_view::npos ? whole
                                                                                           : s.substr(i, 1));
}

std::string shell_word(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
          std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return escape(out + "'", 200);
}

std::string counted(size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace lab
