#include "runner/exercise_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "amp/detail/atomic_file.h"

namespace runner {

std::string learner_unit(const std::string& learner_path, const std::string& text) {
  std::string escaped;
  for (char c : learner_path) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  std::string out = "#line 1 \"" + escaped + "\"\n" + text;
  if (!text.empty() && text.back() != '\n') out += "\n";
  return out;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExerciseError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ExerciseError(fmt::format("cannot read {}", path));
  return text.str();
}

void write_if_changed(const std::string& path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream old;
      old << in.rdbuf();
      if (old.str() == text) return;
    }
  }
  try {
    amp::detail::write_file_atomically(path, text);
  } catch (const amp::detail::AtomicFileError& e) {
    throw ExerciseError(fmt::format("cannot write {}: {}", path, e.code().message()));
  }
}

}  // namespace runner
