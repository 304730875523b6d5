#include "runner/quiz.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace runner {
namespace {

constexpr int kOptions = 4;

class Validator {
 public:
  explicit Validator(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& field, const std::string& what) const {
    // yaml-cpp marks are 0-based; editors count from 1.
    if (mark.is_null()) throw QuizError(fmt::format("{}: {}: {}", path_, field, what));
    throw QuizError(fmt::format("{}:{}:{}: {}: {}", path_, mark.line + 1, mark.column + 1, field, what));
  }

  YAML::Node required(const YAML::Node& parent, const char* key, const std::string& field) const {
    YAML::Node node = parent[key];
    if (!node) fail(parent.Mark(), field, "missing (required)");
    return node;
  }

  std::string text(const YAML::Node& parent, const char* key, const std::string& field) const {
    YAML::Node node = required(parent, key, field);
    if (!node.IsScalar()) fail(node.Mark(), field, "must be a string");
    std::string value = node.as<std::string>();
    if (value.find_first_not_of(" \t\n") == std::string::npos) fail(node.Mark(), field, "must not be empty");
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
    return value;
  }

 private:
  std::string path_;
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
    Track t{v.text(list[i], "id", at + ".id"), v.text(list[i], "title", at + ".title")};
    if (t.id == kAllTracks) v.fail(list[i]["id"].Mark(), at + ".id", "'all' is reserved for every track together");
    for (const auto& other : tracks)
      if (other.id == t.id) v.fail(list[i]["id"].Mark(), at + ".id", "duplicate track '" + t.id + "'");
    tracks.push_back(std::move(t));
  }
  return tracks;
}

}  // namespace

Quiz select_track(const Quiz& quiz, const std::string& track) {
  if (track == kAllTracks) return quiz;
  const bool known = std::any_of(quiz.tracks.begin(), quiz.tracks.end(), [&](const Track& t) { return t.id == track; });
  if (!known) throw QuizError(fmt::format("no track named '{}' (tracks: {}, {})", track, track_names(quiz.tracks), kAllTracks));
  Quiz selected = quiz;
  selected.questions.clear();
  for (const auto& q : quiz.questions)
    if (q.track == track) selected.questions.push_back(q);
  return selected;
}

std::vector<std::string> placeholders(const std::string& text) {
  std::vector<std::string> names;
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    const size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    names.push_back(text.substr(open + 1, close - open - 1));
  }
  return names;
}

std::string fill(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', pos)) {
    const size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    out += text.substr(pos, open - pos);
    const std::string name = text.substr(open + 1, close - open - 1);
    const auto it = values.find(name);
    if (it == values.end()) throw QuizError("no observed value for placeholder {" + name + "}");
    out += it->second;
    pos = close + 1;
  }
  return out + text.substr(pos);
}

Quiz load_quiz(const std::string& path, const LabLookup& labs) {
  Validator v(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw QuizError(path + ": cannot read the quiz file");
  } catch (const YAML::ParserException& e) {
    v.fail(e.mark, "syntax", e.msg);
  }
  if (!root.IsMap()) v.fail(root.Mark(), "top level", "must be a mapping with title and questions");

  Quiz quiz;
  quiz.title = v.text(root, "title", "title");
  if (root["intro"]) quiz.intro = v.text(root, "intro", "intro");
  quiz.tracks = load_tracks(v, root);
  YAML::Node questions = v.required(root, "questions", "questions");
  if (!questions.IsSequence() || questions.size() == 0) v.fail(questions.Mark(), "questions", "must be a non-empty list");

  std::set<std::string> ids;
  for (size_t i = 0; i < questions.size(); ++i) {
    const YAML::Node q = questions[i];
    const std::string at = fmt::format("questions[{}]", i);
    if (!q.IsMap()) v.fail(q.Mark(), at, "must be a mapping");
    Question question;
    question.number = static_cast<int>(i) + 1;
    question.id = v.text(q, "id", at + ".id");
    if (!ids.insert(question.id).second) v.fail(q["id"].Mark(), at + ".id", "duplicate id '" + question.id + "'");
    question.track = quiz.tracks.front().id;
    if (q["track"]) {
      question.track = v.text(q, "track", at + ".track");
      const bool declared = std::any_of(quiz.tracks.begin(), quiz.tracks.end(),
                                        [&](const Track& t) { return t.id == question.track; });
      if (!declared) v.fail(q["track"].Mark(), at + ".track", "no track named '" + question.track + "' in tracks: " + track_names(quiz.tracks));
    }
    question.prompt = v.text(q, "prompt", at + ".prompt");

    const YAML::Node options = v.required(q, "options", at + ".options");
    if (!options.IsSequence() || options.size() != kOptions)
      v.fail(options.Mark(), at + ".options", fmt::format("must list exactly {} options", kOptions));
    for (size_t k = 0; k < options.size(); ++k) {
      if (!options[k].IsScalar()) v.fail(options[k].Mark(), fmt::format("{}.options[{}]", at, k), "must be a string");
      question.options.push_back(options[k].as<std::string>());
    }

    // One letter: exactly one correct option, and it must exist.
    const YAML::Node answer = v.required(q, "answer", at + ".answer");
    const std::string letter = answer.IsScalar() ? answer.as<std::string>() : "";
    if (letter.size() != 1 || letter[0] < 'a' || letter[0] >= 'a' + kOptions)
      v.fail(answer.Mark(), at + ".answer",
             fmt::format("must be exactly one letter from a to {}, got '{}'", char('a' + kOptions - 1),
                         answer.IsScalar() ? letter : std::string("a list or mapping")));
    question.answer = letter[0] - 'a';

    question.lab = v.text(q, "lab", at + ".lab");
    const auto provided = labs(question.lab);
    if (!provided) v.fail(q["lab"].Mark(), at + ".lab", "no lab named '" + question.lab + "' (see: amp-lab list)");

    // {key} is the lab's text for the observation, {key:value} its bare number and unit.
    auto check_placeholders = [&](const YAML::Node& node, const std::string& field) {
      for (const auto& placeholder : placeholders(node.as<std::string>())) {
        const auto colon = placeholder.find(':');
        const std::string name = placeholder.substr(0, colon);
        if (colon != std::string::npos && placeholder.substr(colon + 1) != "value")
          v.fail(node.Mark(), field, fmt::format("placeholder {{{}}}: the only format is ':value'", placeholder));
        if (std::find(provided->begin(), provided->end(), name) == provided->end())
          v.fail(node.Mark(), field,
                 fmt::format("placeholder {{{}}} is not an observation lab '{}' provides", name, question.lab));
      }
    };
    question.explanation = v.text(q, "explanation", at + ".explanation");
    question.hint = v.text(q, "hint", at + ".hint");
    check_placeholders(q["explanation"], at + ".explanation");
    check_placeholders(q["hint"], at + ".hint");
    if (const YAML::Node why_not = q["why_not"]) {
      const std::string field = at + ".why_not";
      if (!why_not.IsMap()) v.fail(why_not.Mark(), field, "must map wrong options' letters to why each is wrong");
      for (const auto& entry : why_not) {
        const std::string key = entry.first.IsScalar() ? entry.first.as<std::string>() : "";
        const int index = key.size() == 1 ? key[0] - 'a' : -1;
        if (index < 0 || index >= kOptions || index == question.answer)
          v.fail(entry.first.Mark(), field,
                 fmt::format("'{}' is not the letter of a wrong option (the answer is {})", key,
                             char('a' + question.answer)));
        const std::string entry_field = field + "." + key;
        const std::string text = entry.second.IsScalar() ? entry.second.as<std::string>() : "";
        if (text.find_first_not_of(" \t\n") == std::string::npos)
          v.fail(entry.second.Mark(), entry_field, "must be a non-empty string");
        check_placeholders(entry.second, entry_field);
        question.why_not[index] = text.substr(0, text.find_last_not_of(" \n") + 1);
      }
    }
    quiz.questions.push_back(std::move(question));
  }
  for (size_t i = 0; i < quiz.tracks.size(); ++i) {
    const auto& t = quiz.tracks[i];
    if (std::none_of(quiz.questions.begin(), quiz.questions.end(), [&](const Question& q) { return q.track == t.id; }))
      v.fail(root["tracks"][i].Mark(), fmt::format("tracks[{}]", i), "track '" + t.id + "' has no questions");
  }
  return quiz;
}

}  // namespace runner
