#include "runner/exercise_files.h"

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "amp/detail/atomic_file.h"
#include "lab/regular_file.h"

namespace runner {

std::string learner_unit(const std::string& learner_path, const std::string& text) {
  // The path as a string literal, which the compiler reads with its escapes: a quote, a backslash, and a
  // newline or any other control byte (which would end the directive) escaped.
  std::string escaped;
  for (const char c : learner_path) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      escaped += std::string("\\") + c;
    else if (u < 0x20 || u == 0x7f)
      escaped += fmt::format("\\{:03o}", u);
    else
      escaped += c;
  }
  // A UTF-8 byte-order mark is skipped by the compiler only at the very start of a file: after the #line
  // it would be a stray token. The file's first line stays line 1.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const std::string_view body = std::string_view(text).substr(text.rfind(kBom, 0) == 0 ? kBom.size() : 0);
  std::string out = "#line 1 \"" + escaped + "\"\n" + std::string(body);
  if (!body.empty() && body.back() != '\n') out += "\n";
  return out;
}

std::string read_text_file(const std::string& path) {
  try {
    return lab::read_regular_file(path, {.max_bytes = kMaxSourceBytes});
  } catch (const lab::ReadError& e) {
    throw ExerciseError(e.what());
  }
}

void write_if_changed(const std::string& path, const std::string& text) {
  try {
    if (lab::read_regular_file(path, {.max_bytes = text.size(), .follow = false}) == text) return;
  } catch (const lab::ReadError&) {  // missing, another size, or not a file: written (or refused) below
  }
  try {
    amp::detail::write_file_atomically(path, text);
  } catch (const amp::detail::AtomicFileError& e) {
    throw ExerciseError(fmt::format("cannot write {}: {}", path, e.code().message()));
  }
}

}  // namespace runner
