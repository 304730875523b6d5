// Terminal text helpers: ANSI styling that can be switched off, padding that counts UTF-8 glyphs,
// aligned tables, number formatting.
#pragma once

#include <string>
#include <vector>

namespace lab {

struct Style {
  bool color = false;
  std::string bold(const std::string& s) const { return wrap("1", s); }
  std::string dim(const std::string& s) const { return wrap("2", s); }
  std::string green(const std::string& s) const { return wrap("32", s); }
  std::string red(const std::string& s) const { return wrap("31", s); }
  std::string yellow(const std::string& s) const { return wrap("33", s); }

 private:
  std::string wrap(const char* code, const std::string& s) const {
    return color ? "\x1b[" + std::string(code) + "m" + s + "\x1b[0m" : s;
  }
};

// Glyphs, not bytes: "▇" is one column wide.
size_t display_width(const std::string& s);
std::string pad_right(const std::string& s, size_t width);
std::string pad_left(const std::string& s, size_t width);
// Columns of numbers right-aligned, the first column and words left-aligned, a rule under the header.
std::vector<std::string> format_table(const std::vector<std::string>& columns,
                                      const std::vector<std::vector<std::string>>& rows);

// Greedy word wrap to `width` glyphs; lines after the first start with `indent`.
std::string wrap(const std::string& text, size_t width, const std::string& indent = "");

// Colour on a terminal unless NO_COLOR is set or the caller turned it off.
bool want_color(bool no_color_flag);

}  // namespace lab
