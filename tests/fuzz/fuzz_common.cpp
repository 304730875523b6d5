// Properties shared by the fuzz targets: what every message that quotes input must look like.
#include <cstdio>
#include <cstdlib>

#include "fuzz_harness.h"
#include "lab/text.h"

void amp_lab_fuzz_check_message(const std::string& message, const std::string& prefix,
                                std::size_t max_glyphs) {
  const char* broken = nullptr;
  if (message.rfind(prefix, 0) != 0)
    broken = "does not start with its prefix";
  else if (lab::display_width(message) > max_glyphs)
    broken = "is too long";
  else if (lab::invalid_utf8_at(message) != std::string::npos)
    broken = "is not UTF-8";
  for (unsigned char c : message)
    if (c < 0x20 || c == 0x7F) broken = "holds a control character";
  if (!broken) return;
  std::fprintf(stderr, "BROKEN PROPERTY: a message %s (%zu bytes): %s\n", broken, message.size(),
               lab::safe_line(message, 300).c_str());
  std::abort();
}

std::string amp_lab_fuzz_shape(const std::string& message) {
  std::string shape;
  bool in_quote = false;
  for (size_t i = 0; i < message.size() && shape.size() < 120; ++i) {
    const char c = message[i];
    if (c == '\'')
      in_quote = !in_quote;
    else if (message.compare(i, 3, "\xe2\x80\x98") == 0)
      in_quote = true;  // cxxopts quotes with ‘ ’
    else if (message.compare(i, 3, "\xe2\x80\x99") == 0)
      in_quote = false;
    else if (!in_quote && !(c >= '0' && c <= '9'))
      shape += c;
  }
  return shape;
}
