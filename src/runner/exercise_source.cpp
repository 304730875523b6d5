#include "runner/exercise_source.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace runner {
namespace {

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  throw ExerciseSourceError(fmt::format("{}:{}: {}", path, line + 1, what));
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool is_directive(const std::string& line) {
  return !trim(line).empty() && trim(line)[0] == '#';
}

// The directive's name and first word: "#  ifndef AMP_LAB_EXERCISE  // x" -> {"ifndef", "AMP_LAB_EXERCISE"}.
std::pair<std::string, std::string> directive(const std::string& line) {
  std::istringstream in(trim(line).substr(1));
  std::string name, arg;
  in >> name >> arg;
  return {name, arg};
}

// What an opening brace opened.
struct Scope {
  enum Kind { Namespace, Class, Other } kind = Other;
  std::string name;  // "" for an anonymous namespace
};

// Reads C++ a line at a time, as far as braces and what they open go: comments, string and character
// literals are skipped; the words since the last ';', '{' or '}' tell a namespace and a class from the rest.
class BraceReader {
 public:
  // Returns false when a '}' closes nothing.
  bool read(const std::string& line) {
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (in_comment_) {
        if (c == '*' && i + 1 < line.size() && line[i + 1] == '/') in_comment_ = false, ++i;
        continue;
      }
      if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') break;
      if (c == '/' && i + 1 < line.size() && line[i + 1] == '*') {
        in_comment_ = true, ++i;
        continue;
      }
      if (c == '"' || c == '\'') {
        for (++i; i < line.size() && line[i] != c; ++i)
          if (line[i] == '\\') ++i;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_')) ++j;
        words_.push_back(line.substr(i, j - i));
        i = j - 1;
      } else if (c == '(') {
        words_.push_back("(");
      } else if (c == ';') {
        words_.clear();
      } else if (c == '{') {
        stack_.push_back(classify());
        words_.clear();
      } else if (c == '}') {
        if (stack_.empty()) return false;
        stack_.pop_back();
        words_.clear();
      }
    }
    return true;
  }
  const std::vector<Scope>& scopes() const { return stack_; }

 private:
  Scope classify() const {
    const auto has = [&](const char* w) {
      return std::find(words_.begin(), words_.end(), w) != words_.end();
    };
    if (has("namespace")) {
      const auto it = std::find(words_.begin(), words_.end(), "namespace");
      return {Scope::Namespace, it + 1 != words_.end() ? *(it + 1) : ""};
    }
    if (has("enum") || has("(")) return {};
    for (size_t i = 0; i + 1 < words_.size(); ++i)
      if (words_[i] == "struct" || words_[i] == "class" || words_[i] == "union")
        return {Scope::Class, words_[i + 1]};
    return {};
  }

  bool in_comment_ = false;
  std::vector<std::string> words_;
  std::vector<Scope> stack_;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool closing_only(const std::string& line) {
  static const std::regex closing(R"(^\s*\}+;?\s*(//.*)?$)");
  return std::regex_match(line, closing);
}

std::string line_directive(size_t line, const std::string& path) {
  return fmt::format("#line {} \"{}\"\n", line + 1, path);
}

std::string lines_of(const LabSource& lab, size_t from, size_t to) {
  std::string out;
  if (from >= to) return out;
  out += line_directive(from, lab.path);
  for (size_t i = from; i < to; ++i) out += lab.lines[i] + "\n";
  return out;
}

std::string joined(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

// One block's code as it would stand outside its class: each member function's name qualified with the
// class, `static` and `inline` dropped, the class's indentation removed.
std::vector<std::string> out_of_class(const LabSource& lab, const ExerciseBlock& b) {
  std::vector<std::string> out(lab.lines.begin() + b.ifndef_line + 1, lab.lines.begin() + b.else_line);
  size_t indent = std::string::npos;
  for (const auto& l : out)
    if (!trim(l).empty()) indent = std::min(indent, l.find_first_not_of(' '));
  BraceReader depth;
  size_t open = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    std::string& l = out[i];
    if (indent != std::string::npos && l.size() >= indent) l = l.substr(indent);
    const std::string t = trim(l);
    if (open == 0 && !t.empty() && t.rfind("//", 0) != 0) {
      const auto paren = l.find('(');
      if (paren == std::string::npos)
        fail(lab.path, b.ifndef_line + 1 + i,
             "only member function definitions may stand in a block inside a class");
      size_t name_end = paren;
      while (name_end > 0 && l[name_end - 1] == ' ') --name_end;
      size_t name_begin = name_end;
      while (name_begin > 0 &&
             (std::isalnum(static_cast<unsigned char>(l[name_begin - 1])) || l[name_begin - 1] == '_'))
        --name_begin;
      l.insert(name_begin, b.class_name + "::");
      for (const char* word : {"static ", "inline ", "virtual "})
        if (l.rfind(word, 0) == 0) l.erase(0, std::strlen(word));
    }
    depth.read(l);
    open = depth.scopes().size();
  }
  return out;
}

// The context ends after the last block and the lines right after it that only close braces; `closers`
// close what is still open there.
void find_context_end(LabSource& lab) {
  BraceReader to_end;
  size_t end = lab.blocks.back().endif_line + 1;
  while (end < lab.lines.size() && closing_only(lab.lines[end])) ++end;
  for (size_t i = 0; i < end; ++i)
    if (!is_directive(lab.lines[i])) to_end.read(lab.lines[i]);
  lab.context_end = end;
  const auto& open = to_end.scopes();
  for (auto s = open.rbegin(); s != open.rend(); ++s) {
    if (s->kind == Scope::Other)
      fail(lab.path, end - 1, "the context ends inside a function or an initializer");
    lab.closers.push_back(s->kind == Scope::Class ? "};" : "}  // namespace " + s->name);
  }
}

}  // namespace

bool left_out_include(const std::string& include_line) {
  for (const char* h :
       {"<torch/torch.h>", "<fmt/format.h>", "\"lab/registry.h\"", "\"lab/report.h\"", "\"lab/charts.h\""})
    if (include_line.find(h) != std::string::npos) return true;
  return false;
}

LabSource parse_lab_source(const std::string& path, const std::string& text) {
  LabSource lab{.path = path, .lines = split_lines(text)};
  BraceReader reader;
  std::vector<std::string> conditionals;  // the open #if kinds; "exercise" for an AMP_LAB_EXERCISE block
  bool code_seen = false;
  for (size_t i = 0; i < lab.lines.size(); ++i) {
    const std::string& line = lab.lines[i];
    if (!is_directive(line)) {
      if (!code_seen && !trim(line).empty() && trim(line).rfind("//", 0) != 0) {
        code_seen = true;
        lab.code_begin = lab.includes.empty() ? i : lab.includes.back() + 1;
      }
      if (!reader.read(line)) fail(path, i, "a '}' that closes nothing");
      continue;
    }
    const auto [name, arg] = directive(line);
    if (name == "include" && !code_seen) lab.includes.push_back(i);
    if (name == "ifndef" && arg == "AMP_LAB_EXERCISE") {
      ExerciseBlock b{.ifndef_line = i};
      for (const Scope& s : reader.scopes()) {
        if (s.kind == Scope::Namespace && s.name.empty())
          fail(path, i,
               "an AMP_LAB_EXERCISE block inside an anonymous namespace cannot link with the learner's file");
        if (s.kind == Scope::Namespace) b.namespaces.push_back(s.name);
        if (s.kind == Scope::Other)
          fail(path, i, "an AMP_LAB_EXERCISE block must stand in a namespace or a class");
      }
      if (b.namespaces.empty()) fail(path, i, "an AMP_LAB_EXERCISE block must stand in a named namespace");
      if (reader.scopes().back().kind == Scope::Class) b.class_name = reader.scopes().back().name;
      lab.blocks.push_back(b);
      conditionals.push_back("exercise");
    } else if (name.rfind("if", 0) == 0) {
      conditionals.push_back(name);
    } else if (name == "else" || name == "endif") {
      if (conditionals.empty()) fail(path, i, "#" + name + " without #if");
      if (conditionals.back() == "exercise") {
        ExerciseBlock& b = lab.blocks.back();
        if (name == "else" && b.else_line) fail(path, i, "a second #else in an AMP_LAB_EXERCISE block");
        (name == "else" ? b.else_line : b.endif_line) = i;
        if (name == "endif" && !b.else_line)
          fail(path, i, "an AMP_LAB_EXERCISE block needs an #else with the declarations the lab calls");
        if (reader.scopes().size() != b.namespaces.size() + !b.class_name.empty())
          fail(path, i, "the braces of an AMP_LAB_EXERCISE branch do not balance");
      }
      if (name == "endif") conditionals.pop_back();
    }
  }
  if (lab.blocks.empty()) fail(path, 0, "no #ifndef AMP_LAB_EXERCISE block");
  if (!conditionals.empty()) fail(path, lab.lines.size() - 1, "an #if without #endif");
  find_context_end(lab);
  return lab;
}

std::string context_header(const LabSource& lab, const std::string& header_name) {
  std::string out = fmt::format(
      "// {}: generated by amp-lab-exercise-gen from {}. Do not edit it; change the lab.\n"
      "// What the exercise's code may use from the lab (its includes, constants and helpers) and the\n"
      "// declarations of what the lab calls: the lab's text up to its last AMP_LAB_EXERCISE block, each\n"
      "// block as its declarations.\n"
      "#pragma once\n"
      "#pragma GCC system_header  // no warning about the lab's helpers this file does not use\n"
      "#include \"runner/exercise_pch.h\"  // in place of <torch/torch.h>\n",
      header_name, lab.path);
  for (size_t i : lab.includes)
    if (!left_out_include(lab.lines[i])) out += lab.lines[i] + "\n";
  size_t from = lab.code_begin;
  for (const auto& b : lab.blocks) {
    out += lines_of(lab, from, b.ifndef_line);
    out += lines_of(lab, b.else_line + 1, b.endif_line);
    from = b.endif_line + 1;
  }
  out += lines_of(lab, from, lab.context_end);
  for (const auto& c : lab.closers) out += c + "\n";
  return out;
}

std::string reference_unit(const LabSource& lab, const std::string& header_name) {
  std::string out = fmt::format(
      "// Generated by amp-lab-exercise-gen from {}: the exercise's reference solution, the lab's own code\n"
      "// (its #ifndef AMP_LAB_EXERCISE branches), built like a learner's file. Do not edit it.\n"
      "#include \"{}\"\n",
      lab.path, header_name);
  for (const auto& b : lab.blocks) {
    const std::string ns = joined(b.namespaces, "::");
    out += "\nnamespace " + ns + " {\n" + line_directive(b.ifndef_line + 1, lab.path);
    if (b.class_name.empty()) {
      for (size_t i = b.ifndef_line + 1; i < b.else_line; ++i) out += lab.lines[i] + "\n";
    } else {
      for (const auto& l : out_of_class(lab, b)) out += l + "\n";
    }
    out += "}  // namespace " + ns + "\n";
  }
  return out;
}

std::string solution_text(const LabSource& lab) {
  std::string out;
  for (const auto& b : lab.blocks) {
    out += fmt::format("{}, lines {}-{}{}:\n", lab.path, b.ifndef_line + 2, b.else_line,
                       b.class_name.empty() ? "" : " (inside " + b.class_name + ")");
    for (size_t i = b.ifndef_line + 1; i < b.else_line; ++i) out += lab.lines[i] + "\n";
    out += "\n";
  }
  return out;
}

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
  if (!in) throw ExerciseSourceError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ExerciseSourceError(fmt::format("cannot read {}", path));
  return text.str();
}

bool write_if_changed(const std::string& path, const std::string& text) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream old;
      old << in.rdbuf();
      if (old.str() == text) return true;
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace runner
