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

// The same table laid out in `width` glyphs (0: exactly as above). A table wider than that first wraps
// its cells at word boundaries in narrower columns, narrowing where it costs the fewest extra lines (the
// first column last); when even the longest word of every column cannot fit, each row becomes a record:
// "column: value" lines, the first at the left, the others indented under it. Words are never split.
std::vector<std::string> format_table(const std::vector<std::string>& columns,
                                      const std::vector<std::vector<std::string>>& rows, size_t width);

// Greedy word wrap to `width` glyphs; lines after the first start with `indent`.
std::string wrap(const std::string& text, size_t width, const std::string& indent = "");

// `text` wrapped at word boundaries into lines of at most `width` glyphs (0: no limit): the first line
// starts with `first`, the others with `rest` (a hanging indent). Text that fits on the first line and
// holds no line break or tab is kept as it is; otherwise blanks and newlines between words count as one
// space. No line ends in a blank. A word is never split: one wider than the room gets a line of
// its own, which is then wider than `width`. Empty text gives one line, `first` without trailing blanks.
std::vector<std::string> wrap_lines(std::string_view text, size_t width, std::string_view first = "",
                                    std::string_view rest = "");

// An explanation paragraph as the quiz prints one: `lead` ("Why:", "Not b) the option:"), a space, then
// `text`, wrapped at `width` (0: one line) with every line after the first indented by `hang` columns.
// The lines are joined with '\n', without a final newline.
std::string paragraph(std::string_view lead, std::string_view text, size_t width, size_t hang = 5);

// Layouts narrower than this make no sense (a word does not fit); a smaller width asked for counts as this.
inline constexpr size_t kMinLayoutWidth = 20;

// The columns to lay out standard output in: a terminal's width (ioctl TIOCGWINSZ on stdout), else the
// COLUMNS variable, else 80. So output to a pipe or a file follows COLUMNS when it is set and is 80
// columns wide otherwise (`COLUMNS=120 amp-lab quiz | less`). The result lies in [kMinLayoutWidth, 1000].
size_t terminal_width();
// The same rule from given inputs: `tty_columns` is the terminal's width, 0 when stdout is not one (or it
// reports no width); `columns_env` is COLUMNS' value or nullptr. A COLUMNS that is not a positive decimal
// number is ignored.
size_t terminal_width(size_t tty_columns, const char* columns_env);
// The screen's rows: a terminal's (TIOCGWINSZ on stdout), else LINES when it is a number in [10, 1000],
// else, for output to a pipe or a file with no LINES, kUnlimitedRows (no screen to fit), else 40.
inline constexpr size_t kUnlimitedRows = 100000;
size_t terminal_rows();

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

// The character that starts at byte `i` of `s`: all its bytes when they are well-formed UTF-8 ("é", not
// its first byte), else the one byte, for quote() to show as "\xc3".
std::string character_at(std::string_view s, size_t i);

// A word for a shell, for a command a message suggests: as it is when it holds nothing the shell would act
// on, else in single quotes; escaped like escape() and cut after 200 glyphs.
std::string shell_word(const std::string& s);

// "1 question", "8 questions": `n` and the noun, with an "s" unless n is 1.
std::string counted(size_t n, std::string_view noun);

// Numbers as the reports print them: "12.5%", "3.05e-05", "0.1235", "3 of 21".
std::string percent(double share, int decimals = 1);  // share in [0,1] -> "12.5%"
std::string sci(double value, int digits = 3);        // "3.05e-05"
std::string num(double value, int digits = 4);        // {:.4g}
std::string count_of(long long k, long long n);       // "3 of 21"

// Byte offset of the first byte that does not belong to well-formed UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF included), or std::string_view::npos when all of it is UTF-8.
size_t invalid_utf8_at(std::string_view s);

}  // namespace lab
