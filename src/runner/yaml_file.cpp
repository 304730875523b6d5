// The hardened loader of the runner's YAML files (runner/yaml_file.h).
#include "runner/yaml_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include "lab/text.h"

namespace runner {
namespace {

// "a quiz file", "an exercises file".
std::string a_noun(const char* noun) {
  return (std::strchr("aeiou", noun[0]) ? "an " : "a ") + std::string(noun);
}

// Where in the text a byte offset is, 1-based, for messages about the raw file.
YAML::Mark mark_at(const std::string& text, size_t offset) {
  YAML::Mark m;
  m.pos = static_cast<int>(offset);
  m.line = static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
  const size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  m.column =
      static_cast<int>(line_start == std::string::npos || offset == 0 ? offset : offset - line_start - 1);
  return m;
}

// A character a quiz field may not hold: controls other than tab and newline, C1 controls, bidi overrides.
size_t control_at(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) return i;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F)
      return i;  // U+0080-U+009F
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        static_cast<unsigned char>(s[i + 2]) >= 0xAA && static_cast<unsigned char>(s[i + 2]) <= 0xAE)
      return i;  // U+202A-U+202E
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x81 &&
        static_cast<unsigned char>(s[i + 2]) >= 0xA6 && static_cast<unsigned char>(s[i + 2]) <= 0xA9)
      return i;  // U+2066-U+2069
  }
  return std::string::npos;
}

// The character at s[i] for a message: "\x1b", "\u202e".
std::string char_at(const std::string& s, size_t i) {
  return lab::quote(lab::character_at(s, i));
}

// Blank in any script: only white space (ASCII, no-break, the typographic and ideographic spaces, line
// and paragraph separators) and invisible characters (zero-width spaces and joiners, the byte-order mark).
// A title of one no-break space shows as nothing.
bool blank(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (i + n > s.size()) return false;
    char32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const bool space = cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
                       (cp >= 0x2000 && cp <= 0x200D) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
                       cp == 0x205F || cp == 0x2060 || cp == 0x3000 || cp == 0x180E || cp == 0xFEFF;
    if (!space) return false;
    i += n;
  }
  return true;
}

// Where each YAML document starts and where its first anchor or alias is, from the parser's events alone
// (no tree is built, so an alias is not followed).
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  std::optional<YAML::Mark> anchor;  // the first "&name" or "*name"
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t a) override { anchored(mark, a); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { anchored(mark, 1); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t a, const std::string&) override {
    anchored(mark, a);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t a,
                       YAML::EmitterStyle::value) override {
    anchored(mark, a);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t a,
                  YAML::EmitterStyle::value) override {
    anchored(mark, a);
  }
  void OnMapEnd() override {}

 private:
  void anchored(const YAML::Mark& mark, YAML::anchor_t a) {
    if (a != YAML::NullAnchor && !anchor) anchor = mark;
  }
};

// Line ends: CR-LF is read as it is; a lone CR (old Mac files) becomes LF, so such a file is not read as
// one long line. Byte offsets stay the same.
void normalize_line_ends(std::string& text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) text[i] = '\n';
}

// Raw bytes first: yaml-cpp reads a NUL or invalid UTF-8 as something else and says so obscurely.
void check_bytes(const YamlFile& v, const std::string& text) {
  if (const size_t bad = lab::invalid_utf8_at(text); bad != std::string::npos)
    v.fail(mark_at(text, bad), "encoding",
           fmt::format("byte {} is not UTF-8", lab::quote(text.substr(bad, 1))));
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
      v.fail(mark_at(text, i), "encoding", "the control character " + char_at(text, i) + " is not allowed");
  }
}

// A %YAML or %TAG directive must be followed by "---" (YAML 1.2, 9.2); yaml-cpp reads the document
// without it.
void check_directives(const YamlFile& v, const std::string& text) {
  std::string directive;
  size_t line_start = 0;
  for (int line = 0; line_start < text.size(); ++line) {
    const size_t end = std::min(text.find('\n', line_start), text.size());
    std::string content = text.substr(line_start, end - line_start);
    if (!content.empty() && content.back() == '\r') content.pop_back();
    const size_t first = content.find_first_not_of(" \t");
    if (first != std::string::npos && content[first] != '#') {
      if (content[0] != '%') {
        const bool dashes =
            content.rfind("---", 0) == 0 && (content.size() == 3 || content[3] == ' ' || content[3] == '\t');
        if (!directive.empty() && !dashes) {
          YAML::Mark mark;
          mark.line = line;
          mark.column = 0;
          v.fail(mark, "syntax",
                 fmt::format("the directive {} must be followed by a line '---' before the document",
                             lab::quote(directive)));
        }
        return;
      }
      if (directive.empty()) directive = content;
    }
    line_start = end + 1;
  }
}

// A data file uses no YAML tags: an undeclared handle (!h!x) is an error in YAML that yaml-cpp lets
// through, a tag that contradicts its node (!!map on a list) is ignored, and a custom one means nothing here.
void check_no_tags(const YamlFile& v, const std::string& text, const YAML::Node& node,
                   const std::string& field, const char* noun) {
  const YAML::Mark mark = node.Mark();
  const bool written =
      !mark.is_null() && static_cast<size_t>(mark.pos) < text.size() && text[mark.pos] == '!';
  if (written || (!node.Tag().empty() && node.Tag() != "?" && node.Tag() != "!")) {  // a null has ""
    const std::string tag =
        written ? text.substr(mark.pos, text.find_first_of(" \t\n", mark.pos) - mark.pos) : node.Tag();
    v.fail(mark, field.empty() ? "top level" : field,
           fmt::format("the tag {} is not allowed ({} uses no YAML tags)", lab::quote(tag), a_noun(noun)));
  }
  if (node.IsSequence())
    for (size_t i = 0; i < node.size(); ++i)
      check_no_tags(v, text, node[i], fmt::format("{}[{}]", field, i), noun);
  if (!node.IsMap()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    check_no_tags(v, text, it->first, field, noun);
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    check_no_tags(v, text, it->second, field.empty() ? key : field + "." + key, noun);
  }
}

// One document. Not YAML::LoadAll: yaml-cpp 0.7 loops forever, allocating, on a document that starts
// with ',' (its parser returns without consuming it), so the parser is asked for two documents at most,
// and one that starts where the first did is that stuck ','.
YAML::Node parse_one_document(const YamlFile& v, const std::string& text, const DataKind& kind) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    for (int k = 0; k < 2 && parser.HandleNextDocument(starts); ++k) {
    }
    if (starts.marks.empty())
      v.fail(YAML::Mark(), "top level", fmt::format("the file is empty (expected {})", kind.expected));
    if (starts.marks.size() > 1) {
      const YAML::Mark second = starts.marks[1];
      if (second.pos == starts.marks[0].pos && static_cast<size_t>(second.pos) < text.size())
        v.fail(second, "syntax", "unexpected " + lab::quote(text.substr(second.pos, 1)));
      v.fail(second, "top level",
             fmt::format("a second YAML document; {} holds exactly one", a_noun(kind.noun)));
    }
    // Refused before any tree is built or walked: an alias can make the tree a cycle ("&l [*l]", which
    // the walks below would follow forever) or expand exponentially ("billion laughs").
    if (starts.anchor)
      v.fail(*starts.anchor, "syntax",
             fmt::format("anchors and aliases (&name, *name) are not allowed in {}", a_noun(kind.noun)));
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    v.fail(e.mark, "syntax", fmt::format("nested more than {} levels deep", e.depth()));
  } catch (const YAML::Exception& e) {
    v.fail(e.mark, "syntax", lab::safe_line(e.msg, 200));
  }
}

// A scalar written plain, not quoted: a number or a boolean is plain (yaml-cpp tags a quoted one "!").
bool plain_scalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() != "!";
}

}  // namespace

const char* kind_of(const YAML::Node& node) {
  if (node.IsNull()) return "nothing (an empty value)";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a string";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The file's bytes, refusing what is not a regular file before reading (a FIFO would block, a directory
// fails late with a confusing message) and anything larger than kind.max_bytes.
std::string read_data_file(const std::string& path, const DataKind& kind) {
  const std::string name = lab::escape(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw DataError(fmt::format("{}: cannot read the {}: {}", name, kind.noun, std::strerror(errno)));
  struct stat st{};
  std::string text;
  std::string error;
  if (::fstat(fd, &st) != 0)
    error = std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    error = "it is a directory, not " + a_noun(kind.noun);
  else if (!S_ISREG(st.st_mode))
    error = "not a regular file (a FIFO, socket or device)";
  else if (static_cast<size_t>(st.st_size) > kind.max_bytes)
    error = fmt::format("{} bytes; {} is at most {}", st.st_size, a_noun(kind.noun), kind.max_bytes);
  char buffer[65536];
  while (error.empty()) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = std::strerror(errno);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kind.max_bytes)
      error = fmt::format("more than {} bytes; {} is at most that", kind.max_bytes, a_noun(kind.noun));
  }
  ::close(fd);
  if (!error.empty()) throw DataError(fmt::format("{}: cannot read the {}: {}", name, kind.noun, error));
  return text;
}

YamlFile::YamlFile(std::string text, const std::string& name, const DataKind& kind)
    : name_(lab::escape(name)), text_(std::move(text)), kind_(kind) {
  normalize_line_ends(text_);
  check_bytes(*this, text_);
  check_directives(*this, text_);
  root_ = parse_one_document(*this, text_, kind_);
  check_no_tags(*this, text_, root_, "", kind_.noun);
}

const YAML::Node& YamlFile::root(const std::vector<std::string>& known) const {
  if (!root_.IsMap())
    fail(root_.Mark(), "top level", fmt::format("must be a mapping with {}", kind_.expected));
  keys(root_, known, "");
  return root_;
}

void YamlFile::fail(const YAML::Mark& mark, const std::string& field, const std::string& what) const {
  // yaml-cpp marks are 0-based; editors count from 1. A field path is built from the file's own keys,
  // which may hold any character, so it is escaped here like the file name (one line, no control bytes).
  const std::string at = lab::escape(field);
  if (mark.is_null()) throw DataError(fmt::format("{}: {}: {}", name_, at, what));
  throw DataError(fmt::format("{}:{}:{}: {}: {}", name_, mark.line + 1, mark.column + 1, at, what));
}

// yaml-cpp keeps every pair of a mapping in order, so a key given twice is seen here even though a lookup
// would silently return the first.
void YamlFile::keys(const YAML::Node& map, const std::vector<std::string>& known,
                    const std::string& field) const {
  std::map<std::string, YAML::Mark> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const std::string at = field.empty() ? "top level" : field;
    if (!key.IsScalar()) fail(key.Mark(), at, "a key must be a plain word, got " + std::string(kind_of(key)));
    const std::string name = key.Scalar();
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail(key.Mark(), at, fmt::format("unknown key {} (known: {})", lab::quote(name, 40), joined(known)));
    const auto [first, inserted] = seen.emplace(name, key.Mark());
    if (!inserted)
      fail(key.Mark(), field.empty() ? name : field + "." + name,
           fmt::format("given twice (first at line {})", first->second.line + 1));
  }
}

void YamlFile::mapping(const YAML::Node& node, const std::vector<std::string>& known,
                       const std::string& field, const std::string& what) const {
  if (!node.IsMap()) fail(node.Mark(), field, "must be " + what);
  keys(node, known, field);
}

YAML::Node YamlFile::required(const YAML::Node& parent, const char* key, const std::string& field) const {
  YAML::Node node = parent[key];
  if (!node) fail(parent.Mark(), field, "missing (required)");
  return node;
}

YAML::Node YamlFile::list(const YAML::Node& node, const std::string& field) const {
  if (!node.IsSequence() || node.size() == 0) fail(node.Mark(), field, "must be a non-empty list");
  return node;
}

std::string YamlFile::text(const YAML::Node& node, const std::string& field) const {
  if (!node.IsScalar()) fail(node.Mark(), field, std::string("must be a string, got ") + kind_of(node));
  closed_quote(node, field);
  std::string value = node.Scalar();
  if (blank(value)) fail(node.Mark(), field, "must not be empty");
  if (const size_t bad = lab::invalid_utf8_at(value); bad != std::string::npos)
    fail(node.Mark(), field, fmt::format("is not UTF-8 (byte {} of the value)", bad + 1));
  if (const size_t c = control_at(value); c != std::string::npos)
    fail(node.Mark(), field, "holds the control character " + char_at(value, c));
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

std::string YamlFile::text(const YAML::Node& parent, const char* key, const std::string& field) const {
  return text(required(parent, key, field), field);
}

std::string YamlFile::line(const YAML::Node& node, const std::string& field) const {
  std::string value = text(node, field);
  if (value.find('\n') != std::string::npos)
    fail(node.Mark(), field, "must be one line, and it holds a line break");
  if (value.find('\t') != std::string::npos) fail(node.Mark(), field, "holds a tab; use spaces");
  return value;
}

std::string YamlFile::line(const YAML::Node& parent, const char* key, const std::string& field) const {
  return line(required(parent, key, field), field);
}

bool YamlFile::boolean(const YAML::Node& node, const std::string& field) const {
  if (plain_scalar(node) && (node.Scalar() == "true" || node.Scalar() == "false"))
    return node.Scalar() == "true";
  fail(node.Mark(), field,
       "must be true or false, got " + (node.IsScalar() ? lab::quote(node.Scalar()) : kind_of(node)));
}

double YamlFile::number(const YAML::Node& node, const std::string& field) const {
  if (plain_scalar(node) && !node.Scalar().empty() &&
      node.Scalar().find_first_of(" \t\n") == std::string::npos) {
    const std::string& s = node.Scalar();
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && errno == 0 && std::isfinite(value)) return value;
  }
  fail(node.Mark(), field,
       "must be a finite number, got " + (node.IsScalar() ? lab::quote(node.Scalar()) : kind_of(node)));
}

// yaml-cpp 0.7 takes a quoted scalar that runs to the end of the file as if it were closed.
void YamlFile::closed_quote(const YAML::Node& node, const std::string& field) const {
  const size_t at = static_cast<size_t>(node.Mark().pos);
  if (node.Mark().is_null() || at >= text_.size() || (text_[at] != '"' && text_[at] != '\'')) return;
  const char q = text_[at];
  for (size_t i = at + 1; i < text_.size(); ++i) {
    if (q == '"' && text_[i] == '\\')
      ++i;  // "\"" is an escaped quote
    else if (q == '\'' && text_[i] == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'')
      ++i;  // '' in '...'
    else if (text_[i] == q)
      return;
  }
  fail(node.Mark(), field, fmt::format("the quote {} opened here is never closed", q == '"' ? "\"" : "'"));
}

}  // namespace runner
