#include "runner/quiz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "lab/text.h"

namespace runner {

const std::vector<std::string> kTopLevelKeys = {"title", "intro", "tracks", "questions"};
const std::vector<std::string> kQuestionKeys = {"id",     "track",       "lab",     "prompt", "options",
                                                "answer", "explanation", "why_not", "hint"};

namespace {

constexpr int kOptions = 4;
constexpr size_t kMaxPlaceholder = 64;  // longer brace runs are text, so scanning stays linear

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
}

// One pass over a template: calls on_text for the text between placeholders and on_name for each name.
// Every byte is looked at a bounded number of times, whatever the braces (no rescans from each '{').
template <class OnText, class OnName>
size_t scan_template(const std::string& text, OnText on_text, OnName on_name) {
  size_t stray = std::string::npos, literal_from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}' && stray == std::string::npos) stray = i;
    if (text[i] != '{') continue;
    size_t j = i + 1;
    while (j < text.size() && j - i <= kMaxPlaceholder && is_name_char(text[j])) ++j;
    if (j < text.size() && text[j] == '}' && j > i + 1) {
      on_text(literal_from, i);
      on_name(text.substr(i + 1, j - i - 1));
      literal_from = j + 1;
      i = j;
    } else if (stray == std::string::npos) {
      stray = i;
    }
  }
  on_text(literal_from, text.size());
  return stray;
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

const char* kind(const YAML::Node& node) {
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

class Validator {
 public:
  Validator(std::string name, const std::string& text) : name_(lab::escape(name)), text_(text) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& field, const std::string& what) const {
    // yaml-cpp marks are 0-based; editors count from 1. A field path is built from the file's own keys,
    // which may hold any character, so it is escaped here like the file name (one line, no control bytes).
    const std::string at = lab::escape(field);
    if (mark.is_null()) throw QuizError(fmt::format("{}: {}: {}", name_, at, what));
    throw QuizError(fmt::format("{}:{}:{}: {}: {}", name_, mark.line + 1, mark.column + 1, at, what));
  }

  // Keys: each once, each one of `known`. yaml-cpp keeps every pair of a mapping in order, so a key given
  // twice is seen here even though a lookup would silently return the first.
  void keys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& field) const {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      const std::string at = field.empty() ? "top level" : field;
      if (!key.IsScalar()) fail(key.Mark(), at, "a key must be a plain word, got " + std::string(kind(key)));
      const std::string name = key.Scalar();
      if (std::find(known.begin(), known.end(), name) == known.end())
        fail(key.Mark(), at, fmt::format("unknown key {} (known: {})", lab::quote(name, 40), joined(known)));
      const auto [first, inserted] = seen.emplace(name, key.Mark());
      if (!inserted)
        fail(key.Mark(), field.empty() ? name : field + "." + name,
             fmt::format("given twice (first at line {})", first->second.line + 1));
    }
  }

  YAML::Node required(const YAML::Node& parent, const char* key, const std::string& field) const {
    YAML::Node node = parent[key];
    if (!node) fail(parent.Mark(), field, "missing (required)");
    return node;
  }

  // A string value: not blank, no control characters (a YAML escape such as "\e" can make one), UTF-8.
  std::string text(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) fail(node.Mark(), field, std::string("must be a string, got ") + kind(node));
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

  std::string text(const YAML::Node& parent, const char* key, const std::string& field) const {
    return text(required(parent, key, field), field);
  }

  // yaml-cpp 0.7 takes a quoted scalar that runs to the end of the file as if it were closed.
  void closed_quote(const YAML::Node& node, const std::string& field) const {
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

 private:
  std::string name_;
  const std::string& text_;
};

std::string track_names(const std::vector<Track>& tracks) {
  std::string names;
  for (const auto& t : tracks) names += (names.empty() ? "" : ", ") + t.id;
  return names;
}

// The `tracks:` list, or the single default track "core" when the file has none.
std::vector<Track> load_tracks(const Validator& v, const YAML::Node& root) {
  if (!root["tracks"]) return {Track{"core", "The questions"}};
  const YAML::Node list = root["tracks"];
  if (!list.IsSequence() || list.size() == 0) v.fail(list.Mark(), "tracks", "must be a non-empty list");
  std::vector<Track> tracks;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("tracks[{}]", i);
    if (!list[i].IsMap()) v.fail(list[i].Mark(), at, "must be a mapping with id and title");
    v.keys(list[i], {"id", "title"}, at);
    Track t{v.text(list[i], "id", at + ".id"), v.text(list[i], "title", at + ".title")};
    if (t.id == kAllTracks)
      v.fail(list[i]["id"].Mark(), at + ".id", "'all' is reserved for every track together");
    for (const auto& other : tracks)
      if (other.id == t.id) v.fail(list[i]["id"].Mark(), at + ".id", "duplicate track " + lab::quote(t.id));
    tracks.push_back(std::move(t));
  }
  return tracks;
}

// The file's bytes, refusing what is not a regular file before reading (a FIFO would block, a directory
// fails late with a confusing message) and anything larger than kMaxQuizBytes.
std::string read_quiz_file(const std::string& path) {
  const std::string name = lab::escape(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw QuizError(fmt::format("{}: cannot read the quiz file: {}", name, std::strerror(errno)));
  struct stat st {};
  std::string text;
  std::string error;
  if (::fstat(fd, &st) != 0)
    error = std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    error = "it is a directory, not a quiz file";
  else if (!S_ISREG(st.st_mode))
    error = "not a regular file (a FIFO, socket or device)";
  else if (static_cast<size_t>(st.st_size) > kMaxQuizBytes)
    error = fmt::format("{} bytes; a quiz file is at most {}", st.st_size, kMaxQuizBytes);
  char buffer[65536];
  while (error.empty()) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = std::strerror(errno);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxQuizBytes)
      error = fmt::format("more than {} bytes; a quiz file is at most that", kMaxQuizBytes);
  }
  ::close(fd);
  if (!error.empty()) throw QuizError(fmt::format("{}: cannot read the quiz file: {}", name, error));
  return text;
}

// Line ends: CR-LF is read as it is; a lone CR (old Mac files) becomes LF, so such a file is not read as
// one long line. Byte offsets stay the same.
void normalize_line_ends(std::string& text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) text[i] = '\n';
}

// Raw bytes first: yaml-cpp reads a NUL or invalid UTF-8 as something else and says so obscurely.
void check_bytes(const Validator& v, const std::string& text) {
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
void check_directives(const Validator& v, const std::string& text) {
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

// A quiz file uses no YAML tags: an undeclared handle (!h!x) is an error in YAML that yaml-cpp lets
// through, a tag that contradicts its node (!!map on a list) is ignored, and a custom one means nothing here.
void check_no_tags(const Validator& v, const std::string& text, const YAML::Node& node,
                   const std::string& field) {
  const YAML::Mark mark = node.Mark();
  const bool written =
      !mark.is_null() && static_cast<size_t>(mark.pos) < text.size() && text[mark.pos] == '!';
  if (written || (!node.Tag().empty() && node.Tag() != "?" && node.Tag() != "!")) {  // a null has ""
    const std::string tag =
        written ? text.substr(mark.pos, text.find_first_of(" \t\n", mark.pos) - mark.pos) : node.Tag();
    v.fail(mark, field.empty() ? "top level" : field,
           fmt::format("the tag {} is not allowed (a quiz file uses no YAML tags)", lab::quote(tag)));
  }
  if (node.IsSequence())
    for (size_t i = 0; i < node.size(); ++i) check_no_tags(v, text, node[i], fmt::format("{}[{}]", field, i));
  if (!node.IsMap()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    check_no_tags(v, text, it->first, field);
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    check_no_tags(v, text, it->second, field.empty() ? key : field + "." + key);
  }
}

// One document. Not YAML::LoadAll: yaml-cpp 0.7 loops forever, allocating, on a document that starts
// with ',' (its parser returns without consuming it), so the parser is asked for two documents at most,
// and one that starts where the first did is that stuck ','.
YAML::Node parse_one_document(const Validator& v, const std::string& text) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    for (int k = 0; k < 2 && parser.HandleNextDocument(starts); ++k) {
    }
    if (starts.marks.empty())
      v.fail(YAML::Mark(), "top level", "the file is empty (expected title and questions)");
    if (starts.marks.size() > 1) {
      const YAML::Mark second = starts.marks[1];
      if (second.pos == starts.marks[0].pos && static_cast<size_t>(second.pos) < text.size())
        v.fail(second, "syntax", "unexpected " + lab::quote(text.substr(second.pos, 1)));
      v.fail(second, "top level", "a second YAML document; a quiz file holds exactly one");
    }
    // Refused before any tree is built or walked: an alias can make the tree a cycle ("&l [*l]", which
    // the walks below would follow forever) or expand exponentially ("billion laughs").
    if (starts.anchor)
      v.fail(*starts.anchor, "syntax", "anchors and aliases (&name, *name) are not allowed in a quiz file");
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    v.fail(e.mark, "syntax", fmt::format("nested more than {} levels deep", e.depth()));
  } catch (const YAML::Exception& e) {
    v.fail(e.mark, "syntax", lab::safe_line(e.msg, 200));
  }
}

// A question's track: the first track when it names none, else one of those declared.
std::string read_track(const Validator& v, const YAML::Node& q, const std::string& at,
                       const std::vector<Track>& tracks) {
  if (!q["track"]) return tracks.front().id;
  std::string track = v.text(q, "track", at + ".track");
  const bool declared =
      std::any_of(tracks.begin(), tracks.end(), [&](const Track& t) { return t.id == track; });
  if (!declared)
    v.fail(q["track"].Mark(), at + ".track",
           "no track named " + lab::quote(track) + " in tracks: " + track_names(tracks));
  return track;
}

std::vector<std::string> read_options(const Validator& v, const YAML::Node& q, const std::string& at) {
  const YAML::Node options = v.required(q, "options", at + ".options");
  if (!options.IsSequence() || options.size() != kOptions)
    v.fail(options.Mark(), at + ".options", fmt::format("must list exactly {} options", kOptions));
  std::vector<std::string> texts;
  for (size_t k = 0; k < options.size(); ++k)
    texts.push_back(v.text(options[k], fmt::format("{}.options[{}]", at, k)));
  return texts;
}

// One letter: exactly one correct option, and it must exist. Returns its index.
int read_answer(const Validator& v, const YAML::Node& q, const std::string& at) {
  const YAML::Node answer = v.required(q, "answer", at + ".answer");
  const std::string letter = answer.IsScalar() ? answer.Scalar() : "";
  if (letter.size() != 1 || letter[0] < 'a' || letter[0] >= 'a' + kOptions)
    v.fail(answer.Mark(), at + ".answer",
           fmt::format("must be exactly one letter from a to {}, got {}", char('a' + kOptions - 1),
                       answer.IsScalar() ? lab::quote(letter) : std::string(kind(answer))));
  return letter[0] - 'a';
}

// What a question's templates may name: the observations its lab provides.
struct LabKeys {
  std::string lab;
  std::vector<std::string> provided;
};

// {key} is the lab's text for the observation, {key:value} its bare number and unit.
void check_template(const Validator& v, const YAML::Node& node, const std::string& value,
                    const std::string& field, const LabKeys& keys) {
  if (const size_t stray = stray_brace(value); stray != std::string::npos)
    v.fail(
        node.Mark(), field,
        fmt::format("{} at character {} is not part of a {{placeholder}} (a name of letters, digits and _)",
                    lab::quote(value.substr(stray, 1)), stray + 1));
  for (const auto& placeholder : placeholders(value)) {
    const auto colon = placeholder.find(':');
    const std::string key = placeholder.substr(0, colon);
    if (colon != std::string::npos && placeholder.substr(colon + 1) != "value")
      v.fail(node.Mark(), field, fmt::format("placeholder {{{}}}: the only format is ':value'", placeholder));
    if (std::find(keys.provided.begin(), keys.provided.end(), key) == keys.provided.end())
      v.fail(
          node.Mark(), field,
          fmt::format("placeholder {{{}}} is not an observation lab {} provides", key, lab::quote(keys.lab)));
  }
}

// why_not (optional): the letters of wrong options, each mapped to why that option is wrong.
std::map<int, std::string> read_why_not(const Validator& v, const YAML::Node& q, const std::string& at,
                                        int answer, const LabKeys& keys) {
  std::map<int, std::string> why_not;
  const YAML::Node node = q["why_not"];
  if (!node) return why_not;
  const std::string field = at + ".why_not";
  if (!node.IsMap()) v.fail(node.Mark(), field, "must map wrong options' letters to why each is wrong");
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const int index = key.size() == 1 ? key[0] - 'a' : -1;
    if (index < 0 || index >= kOptions || index == answer)
      v.fail(entry.first.Mark(), field,
             fmt::format("{} is not the letter of a wrong option (the answer is {})", lab::quote(key),
                         char('a' + answer)));
    const std::string entry_field = field + "." + key;
    if (why_not.count(index)) v.fail(entry.first.Mark(), entry_field, "given twice");
    const std::string text = v.text(entry.second, entry_field);
    check_template(v, entry.second, text, entry_field, keys);
    why_not[index] = text;
  }
  return why_not;
}

// questions[i], its fields read and checked in the order their errors are reported; `ids` holds the ids
// of the questions before it.
Question read_question(const Validator& v, const YAML::Node& q, size_t i, const std::vector<Track>& tracks,
                       const LabLookup& labs, std::set<std::string>& ids) {
  const std::string at = fmt::format("questions[{}]", i);
  if (!q.IsMap()) v.fail(q.Mark(), at, "must be a mapping");
  v.keys(q, kQuestionKeys, at);
  Question question;
  question.number = static_cast<int>(i) + 1;
  question.id = v.text(q, "id", at + ".id");
  if (!ids.insert(question.id).second)
    v.fail(q["id"].Mark(), at + ".id", "duplicate id " + lab::quote(question.id));
  question.track = read_track(v, q, at, tracks);
  question.prompt = v.text(q, "prompt", at + ".prompt");
  question.options = read_options(v, q, at);
  question.answer = read_answer(v, q, at);
  question.lab = v.text(q, "lab", at + ".lab");
  const auto provided = labs(question.lab);
  if (!provided)
    v.fail(q["lab"].Mark(), at + ".lab", "no lab named " + lab::quote(question.lab) + " (see: amp-lab list)");
  const LabKeys keys{question.lab, *provided};
  question.explanation = v.text(q, "explanation", at + ".explanation");
  question.hint = v.text(q, "hint", at + ".hint");
  check_template(v, q["explanation"], question.explanation, at + ".explanation", keys);
  check_template(v, q["hint"], question.hint, at + ".hint", keys);
  question.why_not = read_why_not(v, q, at, question.answer, keys);
  return question;
}

// Every declared track holds a question.
void check_tracks_used(const Validator& v, const YAML::Node& root, const Quiz& quiz) {
  for (size_t i = 0; i < quiz.tracks.size(); ++i) {
    const auto& t = quiz.tracks[i];
    if (std::none_of(quiz.questions.begin(), quiz.questions.end(),
                     [&](const Question& q) { return q.track == t.id; }))
      v.fail(root["tracks"][i].Mark(), fmt::format("tracks[{}]", i), "track '" + t.id + "' has no questions");
  }
}

}  // namespace

Quiz select_track(const Quiz& quiz, const std::string& track) {
  if (track == kAllTracks) return quiz;
  const bool known =
      std::any_of(quiz.tracks.begin(), quiz.tracks.end(), [&](const Track& t) { return t.id == track; });
  if (!known)
    throw QuizError(fmt::format("no track named {} (tracks: {}, {})", lab::quote(track),
                                track_names(quiz.tracks), kAllTracks));
  Quiz selected = quiz;
  selected.questions.clear();
  for (const auto& q : quiz.questions)
    if (q.track == track) selected.questions.push_back(q);
  return selected;
}

std::vector<std::string> placeholders(const std::string& text) {
  std::vector<std::string> names;
  scan_template(
      text, [](size_t, size_t) {}, [&](std::string name) { names.push_back(std::move(name)); });
  return names;
}

size_t stray_brace(const std::string& text) {
  return scan_template(
      text, [](size_t, size_t) {}, [](const std::string&) {});
}

std::string fill(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  scan_template(
      text, [&](size_t from, size_t to) { out.append(text, from, to - from); },
      [&](const std::string& name) {
        const auto it = values.find(name);
        if (it == values.end()) throw QuizError("no observed value for placeholder {" + name + "}");
        out += it->second;
      });
  return out;
}

Quiz load_quiz(const std::string& path, const LabLookup& labs) {
  return parse_quiz(read_quiz_file(path), path, labs);
}

Quiz parse_quiz(std::string text, const std::string& name, const LabLookup& labs) {
  normalize_line_ends(text);
  Validator v(name, text);
  check_bytes(v, text);
  check_directives(v, text);
  const YAML::Node root = parse_one_document(v, text);
  check_no_tags(v, text, root, "");
  if (!root.IsMap()) v.fail(root.Mark(), "top level", "must be a mapping with title and questions");
  v.keys(root, kTopLevelKeys, "");

  Quiz quiz;
  quiz.title = v.text(root, "title", "title");
  if (root["intro"]) quiz.intro = v.text(root, "intro", "intro");
  quiz.tracks = load_tracks(v, root);
  YAML::Node questions = v.required(root, "questions", "questions");
  if (!questions.IsSequence() || questions.size() == 0)
    v.fail(questions.Mark(), "questions", "must be a non-empty list");
  std::set<std::string> ids;
  for (size_t i = 0; i < questions.size(); ++i)
    quiz.questions.push_back(read_question(v, questions[i], i, quiz.tracks, labs, ids));
  check_tracks_used(v, root, quiz);
  return quiz;
}

}  // namespace runner
