// quiz.yaml: its questions and tracks, read through the data files' one loader (runner/yaml_file.h).
#include "runner/quiz.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lab/text.h"
#include "runner/yaml_file.h"

namespace runner {

const std::vector<std::string> kTopLevelKeys = {"title", "intro", "tracks", "questions"};
const std::vector<std::string> kQuestionKeys = {"id",     "track",       "lab",     "prompt", "options",
                                                "answer", "explanation", "why_not", "hint"};

namespace {

constexpr DataKind kQuizFile{"quiz file", "title and questions", kMaxQuizBytes};
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

std::string track_names(const std::vector<Track>& tracks) {
  std::string names;
  for (const auto& t : tracks) names += (names.empty() ? "" : ", ") + t.id;
  return names;
}

// The `tracks:` list, or the single default track "core" when the file has none.
std::vector<Track> load_tracks(const YamlFile& v, const YAML::Node& root) {
  if (!root["tracks"]) return {Track{"core", "The questions"}};
  const YAML::Node list = root["tracks"];
  if (!list.IsSequence() || list.size() == 0) v.fail(list.Mark(), "tracks", "must be a non-empty list");
  std::vector<Track> tracks;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("tracks[{}]", i);
    v.mapping(list[i], {"id", "title"}, at, "a mapping with id and title");
    Track t{v.text(list[i], "id", at + ".id"), v.text(list[i], "title", at + ".title")};
    if (t.id == kAllTracks)
      v.fail(list[i]["id"].Mark(), at + ".id", "'all' is reserved for every track together");
    for (const auto& other : tracks)
      if (other.id == t.id) v.fail(list[i]["id"].Mark(), at + ".id", "duplicate track " + lab::quote(t.id));
    tracks.push_back(std::move(t));
  }
  return tracks;
}

// A question's track: the first track when it names none, else one of those declared.
std::string read_track(const YamlFile& v, const YAML::Node& q, const std::string& at,
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

std::vector<std::string> read_options(const YamlFile& v, const YAML::Node& q, const std::string& at) {
  const YAML::Node options = v.required(q, "options", at + ".options");
  if (!options.IsSequence() || options.size() != kOptions)
    v.fail(options.Mark(), at + ".options", fmt::format("must list exactly {} options", kOptions));
  std::vector<std::string> texts;
  for (size_t k = 0; k < options.size(); ++k)
    texts.push_back(v.text(options[k], fmt::format("{}.options[{}]", at, k)));
  return texts;
}

// One letter: exactly one correct option, and it must exist. Returns its index.
int read_answer(const YamlFile& v, const YAML::Node& q, const std::string& at) {
  const YAML::Node answer = v.required(q, "answer", at + ".answer");
  const std::string letter = answer.IsScalar() ? answer.Scalar() : "";
  if (letter.size() != 1 || letter[0] < 'a' || letter[0] >= 'a' + kOptions)
    v.fail(answer.Mark(), at + ".answer",
           fmt::format("must be exactly one letter from a to {}, got {}", char('a' + kOptions - 1),
                       answer.IsScalar() ? lab::quote(letter) : std::string(kind_of(answer))));
  return letter[0] - 'a';
}

// {key} is the lab's text for the observation, {key:value} its bare number and unit. Which keys a lab
// reports only its run says: tests/test_labs.cpp holds every placeholder to the lab's real --json.
void check_template(const YamlFile& v, const YAML::Node& node, const std::string& value,
                    const std::string& field) {
  if (const size_t stray = stray_brace(value); stray != std::string::npos)
    v.fail(
        node.Mark(), field,
        fmt::format("{} at character {} is not part of a {{placeholder}} (a name of letters, digits and _)",
                    lab::quote(value.substr(stray, 1)), stray + 1));
  for (const auto& placeholder : placeholders(value)) {
    const auto colon = placeholder.find(':');
    if (colon != std::string::npos && placeholder.substr(colon + 1) != "value")
      v.fail(node.Mark(), field, fmt::format("placeholder {{{}}}: the only format is ':value'", placeholder));
  }
}

// why_not (optional): the letters of wrong options, each mapped to why that option is wrong.
std::map<int, std::string> read_why_not(const YamlFile& v, const YAML::Node& q, const std::string& at,
                                        int answer) {
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
    check_template(v, entry.second, text, entry_field);
    why_not[index] = text;
  }
  return why_not;
}

// questions[i], its fields read and checked in the order their errors are reported; `ids` holds the ids
// of the questions before it.
Question read_question(const YamlFile& v, const YAML::Node& q, size_t i, const std::vector<Track>& tracks,
                       const LabLookup& labs, std::set<std::string>& ids) {
  const std::string at = fmt::format("questions[{}]", i);
  v.mapping(q, kQuestionKeys, at, "a mapping");
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
  if (!labs(question.lab))
    v.fail(q["lab"].Mark(), at + ".lab", "no lab named " + lab::quote(question.lab) + " (see: amp-lab list)");
  question.explanation = v.text(q, "explanation", at + ".explanation");
  question.hint = v.text(q, "hint", at + ".hint");
  check_template(v, q["explanation"], question.explanation, at + ".explanation");
  check_template(v, q["hint"], question.hint, at + ".hint");
  question.why_not = read_why_not(v, q, at, question.answer);
  return question;
}

// Every declared track holds a question.
void check_tracks_used(const YamlFile& v, const YAML::Node& root, const Quiz& quiz) {
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
  scan_template(text, [](size_t, size_t) {}, [&](std::string name) { names.push_back(std::move(name)); });
  return names;
}

size_t stray_brace(const std::string& text) {
  return scan_template(text, [](size_t, size_t) {}, [](const std::string&) {});
}

std::optional<std::string> unreported_placeholder(const Question& q, const std::set<std::string>& reported) {
  std::vector<std::pair<std::string, std::string>> texts{{q.explanation, "its explanation"},
                                                         {q.hint, "its hint"}};
  for (const auto& [index, why] : q.why_not)
    texts.push_back({why, fmt::format("its why_not.{}", char('a' + index))});
  for (const auto& [text, where] : texts)
    for (const auto& name : placeholders(text))
      if (!reported.count(name.substr(0, name.find(':')))) return fmt::format("{{{}}} in {}", name, where);
  return std::nullopt;
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
  return parse_quiz(read_data_file(path, kQuizFile), path, labs);
}

Quiz parse_quiz(std::string text, const std::string& name, const LabLookup& labs) {
  const YamlFile v(std::move(text), name, kQuizFile);
  const YAML::Node& root = v.root(kTopLevelKeys);
  Quiz quiz;
  quiz.title = v.text(root, "title", "title");
  if (root["intro"]) quiz.intro = v.text(root, "intro", "intro");
  quiz.tracks = load_tracks(v, root);
  const YAML::Node questions = v.list(v.required(root, "questions", "questions"), "questions");
  std::set<std::string> ids;
  for (size_t i = 0; i < questions.size(); ++i)
    quiz.questions.push_back(read_question(v, questions[i], i, quiz.tracks, labs, ids));
  check_tracks_used(v, root, quiz);
  return quiz;
}

}  // namespace runner
