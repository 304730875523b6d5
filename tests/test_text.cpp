// lab::quote, escape and safe_line: every message that quotes input shows it escaped, on one line, cut
// to a sensible length; invalid_utf8_at finds the first byte that is not UTF-8.
#include <doctest/doctest.h>

#include <string>

#include "lab/text.h"

using namespace std::string_literals;

TEST_CASE("quote escapes control bytes, NUL, backslashes and bytes that are not UTF-8") {
  CHECK(lab::quote("plain") == "'plain'");
  CHECK(lab::quote("a\nb\rc\td") == "'a\\nb\\rc\\td'");
  CHECK(lab::quote("\x1b[2J\x1b[Hpwned") == "'\\x1b[2J\\x1b[Hpwned'");
  CHECK(lab::quote("nul\0here"s) == "'nul\\x00here'");  // a NUL does not cut the message short
  CHECK(lab::quote("back\\slash") == "'back\\\\slash'");
  CHECK(lab::quote("half \xc3") == "'half \\xc3'");  // half a UTF-8 character
  CHECK(lab::quote("\xff\xfe") == "'\\xff\\xfe'");
  CHECK(lab::quote("\x7f") == "'\\x7f'");
}

TEST_CASE("quote keeps well-formed UTF-8 but escapes C1 controls and bidirectional overrides") {
  CHECK(lab::quote("caf\xc3\xa9 \xe2\x96\x87") == "'caf\xc3\xa9 \xe2\x96\x87'");
  CHECK(lab::quote("\xc2\x9b"
                   "2J") == "'\\u009b2J'");  // the one-byte CSI of 8-bit terminals
  CHECK(lab::quote("abc\xe2\x80\xae"
                   "def") == "'abc\\u202edef'");
  CHECK(lab::quote("\xed\xa0\x80") == "'\\xed\\xa0\\x80'");  // a UTF-16 surrogate is not UTF-8
  CHECK(lab::quote("\xc0\xaf") == "'\\xc0\\xaf'");           // nor is an overlong '/'
}

TEST_CASE("quote cuts long input after max_glyphs and says how long it was") {
  const std::string big(1 << 20, 'x');
  const std::string q = lab::quote(big, /*max_glyphs=*/10);
  CHECK(q == "'xxxxxxxxxx...' (1048576 bytes)");
  // A cut never splits a UTF-8 character or an escape.
  CHECK(lab::quote("\xc3\xa9\xc3\xa9\xc3\xa9", /*max_glyphs=*/2) == "'\xc3\xa9\xc3\xa9...' (6 bytes)");
  CHECK(lab::quote("ab\x1b", /*max_glyphs=*/4) == "'ab...' (3 bytes)");
  CHECK(lab::quote(std::string(60, 'y')) == "'" + std::string(60, 'y') + "'");  // 60 glyphs by default
}

TEST_CASE(
    "escape is quote without the quotes, and safe_line keeps backslashes so escaped parts stay as they are") {
  CHECK(lab::escape("/tmp/a\nb.yaml") == "/tmp/a\\nb.yaml");
  CHECK(lab::safe_line("already 'a\\x1b' escaped\nthen raw \x1b") ==
        "already 'a\\x1b' escaped\\nthen raw \\x1b");
  const std::string line = lab::safe_line(std::string(5000, 'z'));
  CHECK(line.size() < 450);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("invalid_utf8_at finds the first byte that is not UTF-8") {
  CHECK(lab::invalid_utf8_at("ascii and \xc3\xa9 and \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(lab::invalid_utf8_at("ab\xff") == 2);
  CHECK(lab::invalid_utf8_at("ab\xe2\x82") == 2);        // cut short at the end
  CHECK(lab::invalid_utf8_at("\xf4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(lab::invalid_utf8_at("x\x80") == 1);             // a continuation byte alone
}
