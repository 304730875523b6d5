// quiz.yaml: the questions, their options, the correct answer, the lab that shows it, and an explanation
// whose {placeholders} are filled with that lab's measured observations.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runner/data_files.h"

namespace runner {

// "quiz.yaml:12:5: questions[2].answer: must be one letter from a to d, got 'e'": the data files' error.
using QuizError = DataError;

// A track is a sequence of questions taken together: `amp-lab quiz --track ID`. quiz.yaml declares its
// tracks in a top-level `tracks:` list (the first is the default) and each question names its own with
// `track:` (the first track when omitted). Without a `tracks:` list the file has one track, "core".
struct Track {
  std::string id;     // "core", "recipes"
  std::string title;  // one line, shown by `amp-lab list` and at the start of the walk
};

inline constexpr const char* kAllTracks = "all";  // --track all: every question of every track, in file order

struct Question {
  int number = 0;  // 1-based position in the file (so Q9 stays Q9 whichever track is walked)
  std::string id;
  std::string track;
  std::string lab;
  std::string prompt;
  std::vector<std::string> options;
  int answer = 0;                      // index into options
  std::string explanation;             // why the answer is right
  std::map<int, std::string> why_not;  // option index -> why that wrong option is wrong
  std::string hint;
};

struct Quiz {
  std::string title;
  std::string intro;
  std::vector<Track> tracks;  // at least one; tracks.front() is the default
  std::vector<Question> questions;
};

// The keys a quiz file may hold; any other key is refused (a misspelt key would otherwise be ignored).
// A new key is one more name here and its reading in load_quiz.
extern const std::vector<std::string> kTopLevelKeys;  // title, intro, tracks, questions
extern const std::vector<std::string>
    kQuestionKeys;  // id, track, lab, prompt, options, answer, explanation, why_not, hint

// The largest quiz file read (the project's is about 41 KB).
constexpr size_t kMaxQuizBytes = 1 << 20;

// Loads and validates, through the data files' loader (runner/yaml_file.h: a regular file of at most
// kMaxQuizBytes, UTF-8, one YAML document, no anchors, aliases or tags, no duplicate or unknown keys, no
// unterminated quote, no blank field): required fields; 4 options with exactly one correct (a letter in
// range), the lab exists (`labs`), unique ids, every {placeholder} in explanation, why_not and hint
// well-formed, tracks with unique ids and titles, and every question's track declared. why_not
// (optional) maps the letters of wrong options to why each is wrong. {key} stands for the observation as
// the lab prints it, {key:value} for its bare number and unit. Which keys a lab reports only its run says,
// so a key is not checked here: the walk refuses one the lab's report lacks before it asks the question
// (unreported_placeholder), and tests/test_labs.cpp holds every key of quiz.yaml to the lab's real --json.
// Every error is one line: "file:line:column: field: what", with input quoted by lab::quote().
Quiz load_quiz(const std::string& path, const LabLookup& labs);
// The same for text already in memory; `name` stands for the file in messages.
Quiz parse_quiz(std::string text, const std::string& name, const LabLookup& labs);

// The quiz restricted to one track's questions (numbers kept), or all of them for kAllTracks. An unknown
// track is a QuizError naming the known ones.
Quiz select_track(const Quiz& quiz, const std::string& track);

// The {names} used in a template, in order of appearance. A name is letters, digits and '_', with an
// optional ':format'; a brace that does not open or close such a name is text. Linear in the text's length.
std::vector<std::string> placeholders(const std::string& text);
// Byte offset of the first brace that is not part of a {name}, or std::string::npos.
size_t stray_brace(const std::string& text);
// The first {placeholder} of q's explanation, hint or why_not whose key ({key:value}'s is key) is not in
// `reported`, the observation keys of its lab's report, as "{key} in its explanation"; nullopt when each is.
// A quiz file names keys that only the lab's run can confirm: the walk holds them to the report as it comes
// back, before the question is asked.
std::optional<std::string> unreported_placeholder(const Question& q, const std::set<std::string>& reported);
// Replaces each {name} by values.at(name); an unknown name is a QuizError (tests/test_labs.cpp holds
// quiz.yaml's placeholders to each lab's report).
std::string fill(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace runner
