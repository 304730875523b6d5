// Terminal text helpers: ANSI styling that can be switched off, padding that counts UTF-8 glyphs,
// aligned tables, number formatting, and the one formatter for input quoted in a message.
#pragma once

#include <string>
#include <string_view>
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

// Colour on a terminal unless NO_COLOR is set, TERM is dumb, or the caller turned it off.
bool want_color(bool no_color_flag);

// Input shown in a message, whatever it holds, stays one short, inert line: control bytes (\n, \x1b, NUL),
// C1 and bidirectional-override characters, backslashes and bytes that are not UTF-8 come out escaped
// (\n, \x1b, \x00, \u202e, \\, \xff), and it is cut after `max_glyphs` printed glyphs with "..." and its
// size. quote(): in single quotes, for a value inside a sentence ("no lab named 'x'").
std::string quote(std::string_view input, size_t max_glyphs = 60);
// escape(): the same without quotes, for a file name at the start of a message.
std::string escape(std::string_view input, size_t max_glyphs = 120);
// A whole message made safe to print as one line: like escape(), but backslashes are kept, so parts
// already escaped are not escaped twice; cut after `max_glyphs`.
std::string safe_line(std::string_view message, size_t max_glyphs = 400);

// Byte offset of the first byte that does not belong to well-formed UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF included), or std::string_view::npos when all of it is UTF-8.
size_t invalid_utf8_at(std::string_view s);

}  // namespace lab
