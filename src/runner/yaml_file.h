// The one hardened loader of the runner's YAML data files (runner/data_files.h): each is read, parsed and
// checked by the same code, and its loader then reads its fields through the same checks. Included by the
// loaders' .cpp files only (it brings in yaml-cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "runner/data_files.h"

namespace runner {

// The kind of file, for its messages: "cannot read the glossary file", "a glossary file holds exactly one".
struct DataKind {
  const char* noun;      // "quiz file"
  const char* expected;  // what its top level holds: "title and questions"
  size_t max_bytes;      // the largest file read
};

// The file's bytes: a regular file (a directory or FIFO is refused without blocking) of at most
// kind.max_bytes. Throws DataError: "PATH: cannot read the quiz file: No such file or directory".
std::string read_data_file(const std::string& path, const DataKind& kind);

// One YAML document, parsed and checked before any of its fields is read: UTF-8 without control
// characters (CR-LF and lone CR line ends read as LF), a %YAML or %TAG directive only with its '---', exactly
// one document, no anchors or aliases (refused before a tree is built: no cycle, no alias bomb), no YAML
// tags, nested at most yaml-cpp's depth limit. Every error, then and in the checks below, is one DataError
// line "name:line:column: field: what", with input quoted by lab::quote().
class YamlFile {
 public:
  // `name` stands for the file in messages.
  YamlFile(std::string text, const std::string& name, const DataKind& kind);

  // The top level: a mapping whose keys are among `known`, each once.
  const YAML::Node& root(const std::vector<std::string>& known) const;

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& field, const std::string& what) const;
  // Keys: each once, each one of `known` (a misspelt key would otherwise be ignored).
  void keys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& field) const;
  // A mapping with keys among `known`; `what` says what it should hold ("a mapping with id and title").
  void mapping(const YAML::Node& node, const std::vector<std::string>& known, const std::string& field,
               const std::string& what) const;
  YAML::Node required(const YAML::Node& parent, const char* key, const std::string& field) const;
  // A non-empty list.
  YAML::Node list(const YAML::Node& node, const std::string& field) const;
  // A string value: not blank (white space and zero-width characters of any script count as blank), no
  // control characters (a YAML escape such as "\e" can make one), UTF-8, a quote closed; trailing newlines
  // and spaces dropped.
  std::string text(const YAML::Node& node, const std::string& field) const;
  std::string text(const YAML::Node& parent, const char* key, const std::string& field) const;
  // A text printed as one line, in a table or after a name ("name: definition"): no line break (trailing
  // ones dropped) and no tab, which would come out raw.
  std::string line(const YAML::Node& node, const std::string& field) const;
  std::string line(const YAML::Node& parent, const char* key, const std::string& field) const;
  // true or false, as written.
  bool boolean(const YAML::Node& node, const std::string& field) const;
  // A finite number.
  double number(const YAML::Node& node, const std::string& field) const;

 private:
  void closed_quote(const YAML::Node& node, const std::string& field) const;

  std::string name_;
  std::string text_;
  DataKind kind_;
  YAML::Node root_;
};

// "a list", "a mapping", "nothing (an empty value)", "a string": what a node is, for "must be ..., got ...".
const char* kind_of(const YAML::Node& node);
// "a, b, c"
std::string joined(const std::vector<std::string>& names);

}  // namespace runner
