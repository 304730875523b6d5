// The data files' loading (quiz.yaml, glossary.yaml, exercises.yaml, one loader): the project's quiz is the
// seed's questions verbatim, and every malformed file gets its own error naming the file, the line and
// column, and the field.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "amp_lab_paths.h"
#include "runner/exercise_table.h"
#include "runner/glossary.h"
#include "runner/quiz.h"
#include "runner/quiz_order.h"

namespace {

// One lab, "lab-a", number 9; and "lab-b", number 3, which has no exercise starter.
std::optional<runner::LabRef> fake_labs(const std::string& id) {
  if (id == "lab-a") return runner::LabRef{9, "09_lab_a"};
  if (id == "lab-b") return runner::LabRef{3, "03_lab_b", /*has_starter=*/false};
  return std::nullopt;
}

const char* kGood = R"(title: T
questions:
  - id: q1
    lab: lab-a
    prompt: Why?
    options: [A, B, C, D]
    answer: b
    hint: "{steps} steps"
    explanation: "{lost_share} of updates were lost"
)";

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("amp_lab_quiz_" + name + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

// The error for `text` with `from` replaced by `to`.
std::string error_for(const std::string& name, std::string text, const std::string& from,
                      const std::string& to) {
  if (!from.empty()) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
  }
  const std::string path = write(name, text);
  try {
    runner::load_quiz(path, fake_labs);
  } catch (const runner::QuizError& e) {
    std::string msg = e.what();
    CHECK(msg.rfind(path + ":", 0) == 0);  // every error starts with the file name
    return msg.substr(path.size());
  }
  FAIL("no error for " << name);
  return "";
}

// The error `load` gives for `text` with `from` replaced by `to`, without the file name it starts with.
template <class Load>
std::string error_of(Load load, const std::string& name, std::string text, const std::string& from,
                     const std::string& to) {
  if (!from.empty()) {
    const auto pos = text.find(from);
    REQUIRE_MESSAGE(pos != std::string::npos, from);
    text.replace(pos, from.size(), to);
  }
  const std::string path = write(name, text);
  try {
    load(path);
  } catch (const runner::DataError& e) {
    std::string msg = e.what();
    CHECK(msg.rfind(path, 0) == 0);  // every error starts with the file name
    CHECK(msg.find('\n') == std::string::npos);
    return msg.substr(path.size());
  }
  FAIL("no error for " << name);
  return "";
}

}  // namespace

TEST_CASE("a well-formed quiz file loads with its answer as an index and its placeholders filled") {
  const auto quiz = runner::load_quiz(write("good", kGood), fake_labs);
  REQUIRE(quiz.questions.size() == 1);
  const auto& q = quiz.questions[0];
  CHECK(q.answer == 1);
  CHECK(q.number == 1);
  CHECK(q.options == std::vector<std::string>{"A", "B", "C", "D"});
  CHECK(runner::placeholders(q.explanation) == std::vector<std::string>{"lost_share"});
  CHECK(runner::fill(q.explanation, {{"lost_share", "42.0%"}}) == "42.0% of updates were lost");
  // Which keys a lab reports only its run says: tests/test_labs.cpp holds them to each lab's --json.
  CHECK(runner::load_quiz(write("any-key", std::string(kGood).replace(std::string(kGood).find("{steps}"), 7,
                                                                      "{any_key:value}")),
                          fake_labs)
            .questions[0]
            .hint == "{any_key:value} steps");
}

TEST_CASE("a placeholder the lab's report lacks is named, in the explanation, the hint or a why_not") {
  const std::string with = std::string(kGood) + "    why_not:\n      a: \"{gone:value} say no\"\n";
  const auto q = runner::load_quiz(write("unreported", with), fake_labs).questions.at(0);
  CHECK(runner::unreported_placeholder(q, {"lost_share", "steps"}) == "{gone:value} in its why_not.a");
  CHECK(runner::unreported_placeholder(q, {"lost_share", "steps", "gone"}) == std::nullopt);
  CHECK(runner::unreported_placeholder(q, {"steps", "gone"}) == "{lost_share} in its explanation");
  CHECK(runner::unreported_placeholder(q, {"lost_share", "gone"}) == "{steps} in its hint");
}

TEST_CASE("each malformed quiz file gets its own error with line, column and field") {
  CHECK(error_for("syntax", kGood, "options: [A, B, C, D]", "options: [A, B").find("syntax") !=
        std::string::npos);
  CHECK(error_for("no-title", kGood, "title: T\n", "") == ":1:1: title: missing (required)");
  CHECK(error_for("no-prompt", kGood, "    prompt: Why?\n", "") ==
        ":3:5: questions[0].prompt: missing (required)");
  CHECK(error_for("empty-prompt", kGood, "prompt: Why?", "prompt: ''") ==
        ":5:13: questions[0].prompt: must not be empty");
  CHECK(error_for("three-options", kGood, "[A, B, C, D]", "[A, B, C]") ==
        ":6:14: questions[0].options: must list exactly 4 options");
  CHECK(error_for("answer-out-of-range", kGood, "answer: b", "answer: e") ==
        ":7:13: questions[0].answer: must be exactly one letter from a to d, got 'e'");
  CHECK(error_for("two-answers", kGood, "answer: b", "answer: [a, b]") ==
        ":7:13: questions[0].answer: must be exactly one letter from a to d, got a list");
  CHECK(error_for("null-answer", kGood, "answer: b", "answer: ~") ==
        ":7:13: questions[0].answer: must be exactly one letter from a to d, got nothing (an empty value)");
  CHECK(error_for("unknown-lab", kGood, "lab: lab-a", "lab: lab-z") ==
        ":4:10: questions[0].lab: no lab named 'lab-z' (see: amp-lab list)");
  CHECK(error_for("bad-format", kGood, "{steps}", "{steps:text}") ==
        ":8:11: questions[0].hint: placeholder {steps:text}: the only format is ':value'");
  CHECK(error_for("questions-not-list", "title: T\nquestions: 3\n", "", "") ==
        ":2:12: questions: must be a non-empty list");
  std::string twice = kGood + std::string(kGood).substr(std::string(kGood).find("  - id"));
  CHECK(error_for("duplicate-id", twice, "", "") == ":10:9: questions[1].id: duplicate id 'q1'");
}

TEST_CASE("why_not explains wrong options by letter, with placeholders checked like the explanation") {
  const std::string with =
      std::string(kGood) + "    why_not:\n      a: \"{steps} steps say no\"\n      d: \"D is wrong\"\n";
  const auto quiz = runner::load_quiz(write("why-not", with), fake_labs);
  REQUIRE(quiz.questions.size() == 1);
  const auto& why = quiz.questions[0].why_not;
  REQUIRE(why.size() == 2);
  CHECK(why.at(0) == "{steps} steps say no");
  CHECK(why.at(3) == "D is wrong");
  CHECK(error_for("why-not-answer", with, "d: \"D", "b: \"D") ==
        ":12:7: questions[0].why_not: 'b' is not the letter of a wrong option (the answer is b)");
  CHECK(error_for("why-not-letter", with, "d: \"D", "x: \"D") ==
        ":12:7: questions[0].why_not: 'x' is not the letter of a wrong option (the answer is b)");
  CHECK(error_for("why-not-format", with, "{steps} steps say", "{steps:text} steps say") ==
        ":11:10: questions[0].why_not.a: placeholder {steps:text}: the only format is ':value'");
  CHECK(error_for("why-not-empty", with, "\"D is wrong\"", "\"\"") ==
        ":12:10: questions[0].why_not.d: must not be empty");
  CHECK(error_for("why-not-list", with,
                  "    why_not:\n      a: \"{steps} steps say no\"\n      d: \"D is wrong\"\n",
                  "    why_not: [a, d]\n") ==
        ":10:14: questions[0].why_not: must map wrong options' letters to why each is wrong");
}

// kGood with two tracks: q1 in the default track "core" (no track key), q2 in "extra".
std::string two_tracks() {
  std::string question = std::string(kGood).substr(std::string(kGood).find("  - id"));
  std::string second = question;
  second.replace(second.find("id: q1"), 6, "id: q2\n    track: extra");
  return "title: T\ntracks:\n  - id: core\n    title: The first\n  - id: extra\n    title: The "
         "second\nquestions:\n" +
         question + second;
}

TEST_CASE("without a tracks list every question is in the one default track, core") {
  const auto quiz = runner::load_quiz(write("one-track", kGood), fake_labs);
  REQUIRE(quiz.tracks.size() == 1);
  CHECK(quiz.tracks[0].id == "core");
  CHECK(quiz.questions[0].track == "core");
  CHECK(runner::select_track(quiz, "core").questions.size() == 1);
}

TEST_CASE(
    "a question without a track key joins the first track, and select_track keeps the file's numbering") {
  const auto quiz = runner::load_quiz(write("two-tracks", two_tracks()), fake_labs);
  REQUIRE(quiz.tracks.size() == 2);
  CHECK(quiz.tracks[1].id == "extra");
  CHECK(quiz.tracks[1].title == "The second");
  REQUIRE(quiz.questions.size() == 2);
  CHECK(quiz.questions[0].track == "core");
  CHECK(quiz.questions[1].track == "extra");

  const auto core = runner::select_track(quiz, "core");
  REQUIRE(core.questions.size() == 1);
  CHECK(core.questions[0].id == "q1");
  const auto extra = runner::select_track(quiz, "extra");
  REQUIRE(extra.questions.size() == 1);
  CHECK(extra.questions[0].id == "q2");
  CHECK(extra.questions[0].number == 2);  // Q2 stays Q2 when its track is walked alone
  CHECK(runner::select_track(quiz, runner::kAllTracks).questions.size() == 2);
  CHECK_THROWS_WITH_AS(runner::select_track(quiz, "nope"), "no track named 'nope' (tracks: core, extra, all)",
                       runner::QuizError);
}

TEST_CASE("each malformed track gets its own located error") {
  const std::string good = two_tracks();
  CHECK(error_for("undeclared-track", good, "track: extra", "track: extar") ==
        ":16:12: questions[1].track: no track named 'extar' in tracks: core, extra");
  CHECK(error_for("duplicate-track", good, "id: extra", "id: core") ==
        ":5:9: tracks[1].id: duplicate track 'core'");
  CHECK(error_for("reserved-track", good, "id: extra\n    title", "id: all\n    title") ==
        ":5:9: tracks[1].id: 'all' is reserved for every track together");
  CHECK(error_for("untitled-track", good, "    title: The second\n", "") ==
        ":5:5: tracks[1].title: missing (required)");
  CHECK(error_for("empty-track", good, "    track: extra\n", "") ==
        ":5:5: tracks[1]: track 'extra' has no questions");
  CHECK(error_for("tracks-not-list", kGood, "questions:\n", "tracks: 3\nquestions:\n") ==
        ":2:9: tracks: must be a non-empty list");
}

TEST_CASE("a missing quiz file, a directory or a FIFO is a clear error, without waiting for a writer") {
  CHECK_THROWS_WITH_AS(runner::load_quiz("/nonexistent/quiz.yaml", fake_labs),
                       "/nonexistent/quiz.yaml: cannot read the quiz file: No such file or directory",
                       runner::QuizError);
  const auto dir = std::filesystem::temp_directory_path();
  CHECK_THROWS_WITH_AS(
      runner::load_quiz(dir.string(), fake_labs),
      (dir.string() + ": cannot read the quiz file: it is a directory, not a quiz file").c_str(),
      runner::QuizError);
  const auto fifo = dir / ("amp_lab_quiz_fifo_" + std::to_string(::getpid()));
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(
      runner::load_quiz(fifo.string(), fake_labs),
      (fifo.string() + ": cannot read the quiz file: not a regular file (a FIFO, socket or device)").c_str(),
      runner::QuizError);
  std::filesystem::remove(fifo);
}

TEST_CASE("YAML that is not what it looks like is refused with its line and column") {
  // Duplicate keys: yaml-cpp would silently take the first.
  CHECK(error_for("dup-answer", kGood, "    answer: b\n", "    answer: c\n    answer: a\n") ==
        ":8:5: questions[0].answer: given twice (first at line 7)");
  CHECK(error_for("dup-title", kGood, "questions:", "title: U\nquestions:") ==
        ":2:1: title: given twice (first at line 1)");
  // A second document, even a broken one, is not ignored.
  CHECK(error_for("two-docs", kGood + std::string("---\ntitle: [\n"), "", "").find("syntax") !=
        std::string::npos);
  CHECK(error_for("two-docs-valid", kGood + std::string("---\ntitle: T2\n"), "", "") ==
        ":10:1: top level: a second YAML document; a quiz file holds exactly one");
  // yaml-cpp 0.7 alone would loop forever, allocating, on a document that starts with ','.
  CHECK(error_for("leading-comma", "# comment\n,title: T\n", "", "") == ":2:1: syntax: unexpected ','");
  // An unterminated quote at the end of the file.
  CHECK(error_for("open-quote", kGood, "\"{lost_share} of updates were lost\"\n", "\"{lost_share} lost\n") ==
        ":9:18: questions[0].explanation: the quote \" opened here is never closed");
  // Misspelt keys.
  CHECK(error_for("itnro", kGood, "questions:", "itnro: hello\nquestions:") ==
        ":2:1: top level: unknown key 'itnro' (known: title, intro, tracks, questions)");
  CHECK(error_for("hnit", kGood, "    hint:", "    hnit:") ==
        ":8:5: questions[0]: unknown key 'hnit' (known: id, track, lab, prompt, options, answer, "
        "explanation, why_not, hint)");
  // Blank strings.
  CHECK(error_for("blank-option", kGood, "[A, B, C, D]", "[A, ' ', C, D]") ==
        ":6:18: questions[0].options[1]: must not be empty");
  CHECK(error_for("blank-title", kGood, "title: T", "title: '  '") == ":1:8: title: must not be empty");
  CHECK(error_for("null-option", kGood, "[A, B, C, D]", "[A, B, ~, D]") ==
        ":6:21: questions[0].options[2]: must be a string, got nothing (an empty value)");
}

TEST_CASE("blank in any script is blank: a field of only no-break or other Unicode spaces is empty") {
  CHECK(error_for("nbsp-title", kGood, "title: T", "title: \"\u00a0\"") == ":1:8: title: must not be empty");
  CHECK(error_for("nbsp-plain", kGood, "title: T", "title: \xc2\xa0") == ":1:8: title: must not be empty");
  CHECK(error_for("ideographic-space", kGood, "prompt: Why?", "prompt: \"\u3000 \u2003\"") ==
        ":5:13: questions[0].prompt: must not be empty");
  CHECK(error_for("zero-width", kGood, "[A, B, C, D]", "[A, \"\u200b\", C, D]") ==
        ":6:18: questions[0].options[1]: must not be empty");
  // Text with such a space inside it is text.
  const auto quiz = runner::load_quiz(
      write("nbsp-inside", std::string(kGood).replace(0, 8, "title: 8\xc2\xa0GB")), fake_labs);
  CHECK(quiz.title == "8\xc2\xa0GB");
}

TEST_CASE(
    "YAML tags are refused: an undeclared handle, a tag that contradicts its node, any tag a quiz needs "
    "not") {
  CHECK(error_for("undeclared-handle", kGood, "title: T", "title: !h!x T") ==
        ":1:8: title: the tag '!h!x' is not allowed (a quiz file uses no YAML tags)");
  CHECK(error_for("map-on-list", kGood, "options: [A, B, C, D]", "options: !!map [A, B, C, D]") ==
        ":6:14: questions[0].options: the tag '!!map' is not allowed (a quiz file uses no YAML tags)");
  CHECK(error_for("local-tag", kGood, "answer: b", "answer: !letter b") ==
        ":7:13: questions[0].answer: the tag '!letter' is not allowed (a quiz file uses no YAML tags)");
  CHECK(error_for("tag-on-key", kGood, "    hint:", "    !!str hint:") ==
        ":8:5: questions[0]: the tag '!!str' is not allowed (a quiz file uses no YAML tags)");
  CHECK(error_for("tag-on-question", kGood, "  - id: q1", "  - !!map\n    id: q1") ==
        ":3:5: questions[0]: the tag '!!map' is not allowed (a quiz file uses no YAML tags)");
}

TEST_CASE("a %YAML or %TAG directive without the --- that must follow it is refused") {
  CHECK(error_for("yaml-no-dashes", "%YAML 1.2\n" + std::string(kGood), "", "") ==
        ":2:1: syntax: the directive '%YAML 1.2' must be followed by a line '---' before the document");
  CHECK(
      error_for("tag-no-dashes", "# comment\n%TAG !h! tag:example.com,2000:\n\n" + std::string(kGood), "",
                "") ==
      ":4:1: syntax: the directive '%TAG !h! tag:example.com,2000:' must be followed by a line '---' before "
      "the document");
  // With its --- the directive is what YAML means it to be, and the file loads.
  const auto quiz =
      runner::load_quiz(write("yaml-dashes", "%YAML 1.2\n---\n" + std::string(kGood)), fake_labs);
  CHECK(quiz.title == "T");
  // A % inside the document is text.
  CHECK(runner::load_quiz(write("percent", std::string(kGood).replace(0, 8, "title: \"%YAML\"")), fake_labs)
            .title == "%YAML");
}

TEST_CASE("bytes that are not UTF-8, control characters and NULs are refused on load, not later") {
  CHECK(error_for("latin1", kGood, "Why?", "Why\xe9?") == ":5:16: encoding: byte '\\xe9' is not UTF-8");
  CHECK(error_for("half-char", kGood, "Why?", "Why\xc3") == ":5:16: encoding: byte '\\xc3' is not UTF-8");
  CHECK(error_for("escape", kGood, "lab: lab-a", "lab: \x1b[2J\x1b[Hpwned") ==
        ":4:10: encoding: the control character '\\x1b' is not allowed");
  CHECK(error_for("nul", kGood, "Why?", std::string("Wh\0y?", 5)) ==
        ":5:15: encoding: the control character '\\x00' is not allowed");
  // A YAML escape makes a control character without one in the file.
  CHECK(error_for("yaml-escape", kGood, "prompt: Why?", "prompt: \"Why\\e[2J?\"") ==
        ":5:13: questions[0].prompt: holds the control character '\\x1b'");
  CHECK(error_for("bidi", kGood, "prompt: Why?", "prompt: \"Why\\u202e?\"") ==
        ":5:13: questions[0].prompt: holds the control character '\\u202e'");
}

TEST_CASE("every error is one line that quotes the input escaped and cut, whatever the input holds") {
  const std::string huge(1 << 19, 'z');
  const std::string msg = error_for("huge-lab", kGood, "lab: lab-a", "lab: " + huge);
  CHECK(msg == ":4:10: questions[0].lab: no lab named '" + std::string(60, 'z') +
                   "...' (524288 bytes) (see: amp-lab list)");
  CHECK(error_for("newline-lab", kGood, "lab: lab-a", "lab: \"lab\\nz\"") ==
        ":4:10: questions[0].lab: no lab named 'lab\\nz' (see: amp-lab list)");
  // Nesting beyond yaml-cpp's limit says so.
  const std::string deep = "title: " + std::string(5000, '[') + "\n";
  CHECK(error_for("deep", deep, "", "").find("nested more than") != std::string::npos);
}

TEST_CASE("a file with CR-only line ends reads like the same file with LF") {
  std::string cr = kGood;
  for (char& c : cr)
    if (c == '\n') c = '\r';
  const auto quiz = runner::load_quiz(write("cr-only", cr), fake_labs);
  REQUIRE(quiz.questions.size() == 1);
  CHECK(quiz.questions[0].prompt == "Why?");
  CHECK(error_for("cr-only-bad", cr, "answer: b", "answer: e") ==
        ":7:13: questions[0].answer: must be exactly one letter from a to d, got 'e'");
}

TEST_CASE("placeholder scanning is linear: a million braces load or fail at once, not in the square") {
  // The old scan searched for '}' from every '{': 10^12 steps here, which ctest's timeout would catch.
  const std::string braces(1'000'000, '{');
  CHECK(runner::placeholders(braces).empty());
  CHECK(runner::fill(braces + "{steps}", {{"steps", "7"}}) == braces + "7");
  CHECK(runner::stray_brace("a {steps} b") == std::string::npos);
  CHECK(runner::stray_brace("a {steps b") == 2);
  CHECK(runner::stray_brace("a } b") == 2);
  CHECK(runner::placeholders("{a}{b:value}{ c }") == std::vector<std::string>{"a", "b:value"});
  CHECK(error_for("many-braces", kGood, "{lost_share} of",
                  "{lost_share} " + std::string(50'000, '{') + " of") ==
        ":9:18: questions[0].explanation: '{' at character 14 is not part of a {placeholder} (a name of "
        "letters, digits and _)");
}

// However many questions the seed lists, and however many a later lab adds to the core track after them.
TEST_CASE("quiz.yaml's core track, the default, starts with the seed's questions verbatim, in order") {
  const std::string seed = AMP_LAB_SOURCE_DIR "/../shared/seed/quiz.txt";
  if (!std::filesystem::exists(seed)) {
    std::cout << "SKIPPED: no seed file at " << seed << " to compare with (it sits beside the clone in CI)\n";
    return;
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> expected;
  std::ifstream in(seed);
  std::string line;
  const std::regex prompt_re(R"(^\d+\. (.*)$)"), option_re(R"(^\s+• (.*)$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, prompt_re)) {
      expected.push_back({m[1], {}});
    } else if (std::regex_match(line, m, option_re)) {
      REQUIRE_MESSAGE(!expected.empty(), "an option before the seed's first question: " << line);
      expected.back().second.push_back(m[1]);
    }
  }
  REQUIRE_FALSE(expected.empty());
  const YAML::Node file = YAML::LoadFile(AMP_LAB_SOURCE_DIR "/quiz.yaml");
  REQUIRE(file["tracks"][0]["id"].as<std::string>() == "core");  // the default track
  std::vector<YAML::Node> questions;
  for (const auto& q : file["questions"])
    if (!q["track"] || q["track"].as<std::string>() == "core") questions.push_back(q);
  REQUIRE(questions.size() >= expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(questions[i]["prompt"].as<std::string>() == expected[i].first);
    CHECK(questions[i]["options"].as<std::vector<std::string>>() == expected[i].second);
  }
}

TEST_CASE(
    "every question in quiz.yaml explains each wrong option, and no hint, explanation or why_not names a "
    "letter") {
  const YAML::Node questions = YAML::LoadFile(AMP_LAB_SOURCE_DIR "/quiz.yaml")["questions"];
  // As many as the file writes out ("  - id:" under questions:), so none is skipped unseen.
  std::ifstream file(AMP_LAB_SOURCE_DIR "/quiz.yaml");
  size_t written = 0;
  bool in_questions = false;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') in_questions = line.rfind("questions:", 0) == 0;
    written += in_questions && line.rfind("  - id:", 0) == 0;
  }
  REQUIRE(written > 0);
  REQUIRE(questions.size() == written);
  const std::regex letter_re(R"((^|[^A-Za-z0-9])[a-dA-D]\))");  // "b)" or "(c)" names an option
  for (const auto& q : questions) {
    const std::string id = q["id"].as<std::string>();
    CAPTURE(id);
    const std::string answer = q["answer"].as<std::string>();
    std::set<std::string> wrong{"a", "b", "c", "d"};
    wrong.erase(answer);
    std::set<std::string> explained;
    for (const auto& entry : q["why_not"]) {
      const std::string why = entry.second.as<std::string>();
      CHECK(why.size() >= 40);  // a reason, not a word
      explained.insert(entry.first.as<std::string>());
    }
    CHECK(explained == wrong);
    CHECK(q["explanation"].as<std::string>().size() >= 80);
    const std::string hint = q["hint"].as<std::string>();
    CHECK_FALSE(std::regex_search(hint, letter_re));
    // The options are shown in an order drawn per learner: a letter in the text would name the wrong one.
    const std::regex option_word(R"(\boptions? [a-dA-D]\b)");
    CHECK_FALSE(std::regex_search(q["explanation"].as<std::string>(), letter_re));
    CHECK_FALSE(std::regex_search(q["explanation"].as<std::string>(), option_word));
    for (const auto& entry : q["why_not"]) {
      CHECK_FALSE(std::regex_search(entry.second.as<std::string>(), letter_re));
      CHECK_FALSE(std::regex_search(entry.second.as<std::string>(), option_word));
    }
    for (const auto& option : q["options"]) CHECK(hint.find(option.as<std::string>()) == std::string::npos);
  }
}

TEST_CASE("anchors and aliases are refused before the tree is walked: a cycle or an alias bomb is one line") {
  // A self-referencing alias made the tag check recurse until the stack overflowed (SIGSEGV).
  CHECK(error_for("self-alias", "title: x\nquestions: []\nloop: &l [*l]\n", "", "") ==
        ":3:7: syntax: anchors and aliases (&name, *name) are not allowed in a quiz file");
  // "Billion laughs": ten levels of ten aliases, 10^10 nodes once followed; it hung the loader.
  std::string bomb = "title: T\nquestions: []\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    std::string refs;
    for (int k = 0; k < 10; ++k) refs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + refs + "]\n";
  }
  CHECK(error_for("alias-bomb", bomb, "", "") ==
        ":3:5: syntax: anchors and aliases (&name, *name) are not allowed in a quiz file");
  // An anchor alone, even one never used, is refused the same way: a quiz file has no use for either.
  CHECK(error_for("anchor", kGood, "[A, B, C, D]", "&o [A, B, C, D]") ==
        ":6:14: syntax: anchors and aliases (&name, *name) are not allowed in a quiz file");
}

// ---- glossary.yaml ------------------------------------------------------------------------------------

namespace {

const char* kGlossary = R"(sources:
  docs: "PyTorch, AMP: https://example.org/amp"
terms:
  - name: ZeRO
    definition: DeepSpeed's sharded data parallelism
    source: "Rajbhandari et al., 2020"
    exact_case: true
  - name: loss scale
    variants: [loss scaling, "amp::scale"]
    definition: the factor the loss is multiplied by before backward
    cite: docs
)";

std::string glossary_error(const std::string& name, const std::string& from, const std::string& to,
                           std::string text = kGlossary) {
  return error_of([](const std::string& path) { runner::load_glossary(path); }, "glossary_" + name,
                  std::move(text), from, to);
}

}  // namespace

TEST_CASE("a well-formed glossary file loads sorted by name, its cited sources filled in") {
  const runner::Glossary g = runner::load_glossary(write("glossary_good", kGlossary));
  REQUIRE(g.terms().size() == 2);
  CHECK(g.terms()[0].name == "loss scale");  // sorted, case-insensitively
  CHECK(g.terms()[0].variants == std::vector<std::string>{"loss scaling", "amp::scale"});
  CHECK(g.terms()[0].source == "PyTorch, AMP: https://example.org/amp");
  CHECK_FALSE(g.terms()[0].exact_case);
  CHECK(g.terms()[1].exact_case);
  CHECK(g.terms()[1].source == "Rajbhandari et al., 2020");
  CHECK(g.find("loss scaling") == &g.terms()[0]);
  CHECK(g.find("zero") == nullptr);
  // A term without a source has none.
  const runner::Glossary bare = runner::parse_glossary("terms:\n  - name: ulp\n    definition: a gap\n", "g");
  CHECK(bare.terms().at(0).source.empty());
}

TEST_CASE("the project's glossary.yaml loads, and every term keeps a one-line definition") {
  const runner::Glossary g = runner::load_glossary(AMP_LAB_SOURCE_DIR "/glossary.yaml");
  CHECK(g.terms().size() >= 80);
  for (const auto& t : g.terms()) CHECK(t.definition.find('\n') == std::string::npos);
}

TEST_CASE("each malformed glossary file gets its own error with line, column and field") {
  CHECK(glossary_error("unknown-key", "    definition: the factor", "    defintion: the factor") ==
        ":10:5: terms[1]: unknown key 'defintion' (known: name, variants, definition, cite, source, "
        "exact_case)");
  CHECK(glossary_error("no-definition", "    definition: DeepSpeed's sharded data parallelism\n", "") ==
        ":4:5: terms[0].definition: missing (required)");
  CHECK(glossary_error("variants-string", "[loss scaling, \"amp::scale\"]", "loss scaling") ==
        ":9:15: terms[1].variants: must be a list of strings, got a string");
  CHECK(glossary_error("variant-list", "[loss scaling, \"amp::scale\"]", "[[loss scaling]]") ==
        ":9:16: terms[1].variants[0]: must be a string, got a list");
  CHECK(glossary_error("exact-case-yes", "exact_case: true", "exact_case: yes") ==
        ":7:17: terms[0].exact_case: must be true or false, got 'yes'");
  CHECK(glossary_error("exact-case-quoted", "exact_case: true", "exact_case: \"true\"") ==
        ":7:17: terms[0].exact_case: must be true or false, got 'true'");
  CHECK(glossary_error("two-lines", "definition: the factor the loss is multiplied by before backward",
                       "definition: \"the factor\\nthe loss\"") ==
        ":10:17: terms[1].definition: must be one line, and it holds a line break");
  // A name, variant, definition or source is printed as one line: a line break or a tab is refused.
  CHECK(glossary_error("name-two-lines", "name: loss scale", "name: \"loss\\nscale\"") ==
        ":8:11: terms[1].name: must be one line, and it holds a line break");
  CHECK(glossary_error("variant-two-lines", "\"amp::scale\"]", "\"amp::\\nscale\"]") ==
        ":9:30: terms[1].variants[1]: must be one line, and it holds a line break");
  CHECK(glossary_error("definition-tab", "definition: the factor the loss is multiplied by before backward",
                       "definition: \"the factor\\tthe loss\"") ==
        ":10:17: terms[1].definition: holds a tab; use spaces");
  CHECK(glossary_error("source-tab", "source: \"Rajbhandari et al., 2020\"",
                       "source: \"Rajbhandari\\tet al.\"") ==
        ":6:13: terms[0].source: holds a tab; use spaces");
  CHECK(glossary_error("cited-two-lines", "docs: \"PyTorch, AMP", "docs: \"PyTorch,\\nAMP") ==
        ":2:9: sources.docs: must be one line, and it holds a line break");
  CHECK(glossary_error("blank", "definition: the factor the loss is multiplied by before backward",
                       "definition: \" \"") == ":10:17: terms[1].definition: must not be empty");
  CHECK(glossary_error("terms-not-list", "", "", "terms: 3\n") == ":1:8: terms: must be a non-empty list");
  CHECK(glossary_error("no-terms", "", "", "sources: {}\n") == ":1:1: terms: missing (required)");
  CHECK(glossary_error("top-key", "terms:", "term:") ==
        ":3:1: top level: unknown key 'term' (known: sources, terms)");
}

TEST_CASE("a glossary's forms belong to one term each, and its sources are cited, each by name") {
  CHECK(glossary_error("same-name", "name: loss scale", "name: Zero") ==
        ":8:11: terms[1].name: 'Zero' is already a form of the term 'ZeRO' (line 4)");
  CHECK(glossary_error("variant-of-other", "[loss scaling, ", "[zero, ") ==
        ":9:16: terms[1].variants[0]: 'zero' is already a form of the term 'ZeRO' (line 4)");
  CHECK(glossary_error("variant-twice", "\"amp::scale\"]", "loss scaling]") ==
        ":9:30: terms[1].variants[1]: 'loss scaling' given twice (first at line 9)");
  CHECK(glossary_error("name-twice", "name: ZeRO", "name: ZeRO\n    name: ZeRO") ==
        ":5:5: terms[0].name: given twice (first at line 4)");
  CHECK(glossary_error("unknown-cite", "cite: docs", "cite: doc") ==
        ":11:11: terms[1].cite: no source named 'doc' in sources (known: docs)");
  CHECK(glossary_error("uncited", "terms:", "  other: \"a book\"\nterms:") ==
        ":3:3: sources.other: no term cites it");
  CHECK(glossary_error("cite-and-source", "    cite: docs\n", "    cite: docs\n    source: \"a book\"\n") ==
        ":12:13: terms[1]: give cite or source, not both");
  CHECK(glossary_error("sources-list", "sources:\n  docs: \"PyTorch, AMP: https://example.org/amp\"",
                       "sources: [docs]") == ":1:10: sources: must map names to citations");
  CHECK(glossary_error("source-twice", "terms:", "  docs: \"again\"\nterms:") ==
        ":3:3: sources.docs: given twice (first at line 2)");
}

TEST_CASE("glossary.yaml gets the quiz file's hardening: aliases, tags, documents, bytes, size, kind") {
  CHECK(glossary_error("anchor", "cite: docs", "cite: &d docs") ==
        ":11:11: syntax: anchors and aliases (&name, *name) are not allowed in a glossary file");
  CHECK(glossary_error("tag", "name: ZeRO", "name: !!str ZeRO") ==
        ":4:11: terms[0].name: the tag '!!str' is not allowed (a glossary file uses no YAML tags)");
  CHECK(glossary_error("two-docs", "", "", std::string(kGlossary) + "---\nterms: []\n") ==
        ":12:1: top level: a second YAML document; a glossary file holds exactly one");
  CHECK(glossary_error("latin1", "sharded", "sh\xe9rded") == ":5:31: encoding: byte '\\xe9' is not UTF-8");
  CHECK(glossary_error("empty", "", "", "# nothing\n") ==
        ":1:1: top level: the file is empty (expected sources and terms)");
  CHECK(glossary_error("list", "", "", "- a\n") ==
        ":1:1: top level: must be a mapping with sources and terms");
  CHECK(glossary_error("deep", "", "", "terms: " + std::string(5000, '[') + "\n").find("nested more than") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(runner::load_glossary("/nonexistent/glossary.yaml"),
                       "/nonexistent/glossary.yaml: cannot read the glossary file: No such file or directory",
                       runner::DataError);
  const auto dir = std::filesystem::temp_directory_path();
  CHECK_THROWS_WITH_AS(
      runner::load_glossary(dir.string()),
      (dir.string() + ": cannot read the glossary file: it is a directory, not a glossary file").c_str(),
      runner::DataError);
  const std::string huge = "terms: \"" + std::string((1 << 20) + 1, 'x') + "\"\n";
  CHECK(glossary_error("huge", "", "", huge).find(": cannot read the glossary file: ") == 0);
}

// ---- exercises.yaml -----------------------------------------------------------------------------------

namespace {

const char* kExercises = R"(exercises:
  - lab: lab-a
    title: the loop
    hints:
      - id: no-update
        error: step() has already been called
        text: call update() after every step
      - id: scaled-twice
        check: trains
        value: {name: scale, range: [1024, 1024]}
        text: scale once
      - id: too-big
        check: trains
        observation: ratio
        range: [2.5, 3.5]
        text: divide the loss
)";

std::string exercises_error(const std::string& name, const std::string& from, const std::string& to,
                            std::string text = kExercises) {
  return error_of([](const std::string& path) { runner::load_exercises(path, fake_labs); },
                  "exercises_" + name, std::move(text), from, to);
}

}  // namespace

TEST_CASE("a well-formed exercises file loads, each exercise named by its lab's number and folder") {
  const auto all = runner::load_exercises(write("exercises_good", kExercises), fake_labs);
  REQUIRE(all.size() == 1);
  const runner::ExerciseInfo& e = all[0];
  CHECK(e.id == "09");
  CHECK(e.stem == "09_lab_a");
  CHECK(e.lab == "lab-a");
  CHECK(e.title == "the loop");
  REQUIRE(e.hints.size() == 3);
  CHECK(e.hints[0].error == "step() has already been called");
  CHECK(e.hints[0].check.empty());
  CHECK(e.hints[1].check == "trains");
  REQUIRE(e.hints[1].values.size() == 1);
  CHECK(e.hints[1].values[0].name == "scale");
  CHECK(e.hints[1].values[0].lo == 1024);
  CHECK(e.hints[1].values[0].hi == 1024);
  CHECK(e.hints[2].observation == "ratio");
  CHECK(e.hints[2].lo == 2.5);
  CHECK(e.hints[2].hi == 3.5);
  CHECK(e.hints[2].text == "divide the loss");
  // The project's file loads with the catalog's labs (tests/test_exercises.cpp runs what it names).
}

TEST_CASE("an exercise names the lab's own runs, and a hint its later steps, api then code") {
  std::string text = kExercises;
  text.replace(text.find("    hints:\n"), 0, "    lab_runs: [demo-overflows, reference-runs]\n");
  text.replace(
      text.find("        text: scale once\n"), 0,
      "        api: scaler.scale(loss)\n        code: |\n          scaler.scale(loss).backward();\n");
  const auto all = runner::load_exercises(write("exercises_steps", text), fake_labs);
  REQUIRE(all.size() == 1);
  const runner::ExerciseInfo& e = all[0];
  CHECK(e.lab_runs == std::vector<std::string>{"demo-overflows", "reference-runs"});
  CHECK_FALSE(e.judges_learner("demo-overflows"));
  CHECK(e.judges_learner("trains"));
  REQUIRE(e.hints.size() == 3);
  CHECK(runner::hint_steps(e.hints[0]) == 1);  // text alone
  CHECK(runner::hint_steps(e.hints[1]) == 3);
  CHECK(runner::hint_step(e.hints[1], 1) == "scale once");
  CHECK(runner::hint_step(e.hints[1], 2) == "scaler.scale(loss)");
  CHECK(runner::hint_step(e.hints[1], 3) == "scaler.scale(loss).backward();");
  CHECK(exercises_error("lab-runs-twice", "    hints:\n", "    lab_runs: [a, b, a]\n    hints:\n") ==
        ":4:22: exercises[0].lab_runs[2]: check 'a' listed twice");
  CHECK(exercises_error("lab-runs-empty", "    hints:\n", "    lab_runs: []\n    hints:\n") ==
        ":4:15: exercises[0].lab_runs: must be a non-empty list");
  CHECK(exercises_error("code-without-api", "        text: scale once\n",
                        "        text: scale once\n        code: x\n") ==
        ":12:15: exercises[0].hints[1].code: comes after an api step, and this hint has none");
}

TEST_CASE("20,000 library errors join each exercise's hints whole and in order, its own ids first") {
  std::string text = std::string(kExercises) + "  - lab: lab-c\n    title: another\nlibrary_errors:\n";
  for (int k = 0; k < 20'000; ++k) text += fmt::format("  - {{id: e{}, error: words {}, text: t}}\n", k, k);
  text += "  - {id: no-update, error: other words, text: shadowed}\n";
  const auto labs = [](const std::string& id) -> std::optional<runner::LabRef> {
    return id == "lab-c" ? std::optional<runner::LabRef>(runner::LabRef{10, "10_lab_c"}) : fake_labs(id);
  };
  const auto all = runner::load_exercises(write("exercises_many_shared", text), labs);
  REQUIRE(all.size() == 2);
  REQUIRE(all[0].hints.size() == 3 + 20'000);  // its own no-update kept, the library's of that id not added
  CHECK(all[0].hints[3].id == "e0");
  CHECK(all[0].hints.back().id == "e19999");
  REQUIRE(all[1].hints.size() == 20'001);  // none of its own: every library error, no-update last
  CHECK(all[1].hints[12'345].error == "words 12345");
  CHECK(all[1].hints.back().text == "shadowed");
}

TEST_CASE("library_errors are every exercise's hints after its own, an exercise's own id first") {
  const std::string shared =
      std::string(kExercises) +
      "library_errors:\n  - id: step-twice\n    error: step() ran twice\n    text: call "
      "update\n  - id: no-update\n    error: other words\n    text: shadowed\n";
  const auto all = runner::load_exercises(write("exercises_shared", shared), fake_labs);
  REQUIRE(all.size() == 1);
  const auto& hints = all[0].hints;
  REQUIRE(hints.size() == 4);  // its own three, then step-twice; its own no-update is not replaced
  CHECK(hints[3].id == "step-twice");
  CHECK(hints[3].shared);
  CHECK(hints[3].error == "step() ran twice");
  CHECK_FALSE(hints[0].shared);
  CHECK(hints[0].text != "shadowed");
  CHECK(exercises_error(
            "shared-check", "", "",
            std::string(kExercises) + "library_errors:\n  - id: x\n    check: trains\n    text: t\n") ==
        ":19:12: library_errors[0].check: a library error is matched by its error words only");
  // An exercise's own hint of a library error's id must be an error's too: a check's would hide the error's.
  CHECK(exercises_error(
            "shadowed-by-check", "", "",
            std::string(kExercises) +
                "library_errors:\n  - id: scaled-twice\n    error: step() ran twice\n    text: t\n") ==
        ":8:13: exercises[0].hints[1].id: hint id 'scaled-twice' is a library error's ('step() ran twice'), "
        "and "
        "this hint names a failed check: give it an id of its own");
}

TEST_CASE("each malformed exercises file gets its own error with line, column and field") {
  CHECK(exercises_error("unknown-lab", "lab: lab-a", "lab: lab-z") ==
        ":2:10: exercises[0].lab: no lab named 'lab-z' (see: amp-lab list)");
  CHECK(exercises_error("lab-without-starter", "lab: lab-a", "lab: lab-b") ==
        ":2:10: exercises[0].lab: lab 'lab-b' has no starter (labs/03_lab_b/exercise.cpp) for the learner to "
        "begin from");
  CHECK(exercises_error("second-for-lab", "", "",
                        std::string(kExercises) + "  - lab: lab-a\n    title: again\n") ==
        ":17:10: exercises[1].lab: a second exercise for lab 'lab-a'");
  CHECK(exercises_error("unknown-key", "value: {name", "vaule: {name") ==
        ":10:9: exercises[0].hints[1]: unknown key 'vaule' (known: id, check, value, observation, range, "
        "error, text, api, code)");
  CHECK(exercises_error("title-list", "title: the loop", "title: [a, b]") ==
        ":3:12: exercises[0].title: must be a string, got a list");
  CHECK(exercises_error("no-title", "    title: the loop\n", "") ==
        ":2:5: exercises[0].title: missing (required)");
  CHECK(exercises_error("no-text", "        text: scale once\n", "") ==
        ":8:9: exercises[0].hints[1].text: missing (required)");
  CHECK(exercises_error("hints-empty", "", "", "exercises:\n  - lab: lab-a\n    title: t\n    hints: []\n") ==
        ":4:12: exercises[0].hints: must be a non-empty list");
  CHECK(exercises_error("duplicate-hint", "id: too-big", "id: no-update") ==
        ":12:13: exercises[0].hints[2].id: duplicate hint id 'no-update'");
  CHECK(exercises_error("exercises-map", "", "", "exercises: {lab: lab-a}\n") ==
        ":1:12: exercises: must be a non-empty list");
  CHECK(exercises_error("top-key", "exercises:", "exercise:") ==
        ":1:1: top level: unknown key 'exercise' (known: exercises, library_errors)");
}

TEST_CASE(
    "a hint matches a failed check or an error, with a check's named values or an observation's range") {
  CHECK(exercises_error("check-and-error", "        error: step() has already been called\n",
                        "        error: step() has already been called\n        check: trains\n") ==
        ":6:16: exercises[0].hints[0]: give check or error, not both");
  CHECK(exercises_error("neither", "        error: step() has already been called\n", "") ==
        ":5:9: exercises[0].hints[0]: missing check or error (one is required)");
  CHECK(exercises_error("value-with-error", "        text: call update",
                        "        value: {name: x, range: [0, 0]}\n        text: call update") ==
        ":7:16: exercises[0].hints[0].value: goes with check, not with error");
  CHECK(exercises_error("value-and-observation", "        observation: ratio\n",
                        "        observation: ratio\n        value: {name: x, range: [0, 0]}\n") ==
        ":15:16: exercises[0].hints[2]: give value or observation, not both");
  // A hint never matches a check's evidence text, which is for people: the key is gone.
  CHECK(exercises_error("evidence", "        value: {name: scale, range: [1024, 1024]}\n",
                        "        evidence: \"1024\"\n") ==
        ":10:9: exercises[0].hints[1]: unknown key 'evidence' (known: id, check, value, observation, range, "
        "error, text, api, code)");
  CHECK(exercises_error("value-no-range", "{name: scale, range: [1024, 1024]}", "{name: scale}") ==
        ":10:16: exercises[0].hints[1].value.range: missing (required)");
  CHECK(exercises_error("value-no-name", "{name: scale, range: [1024, 1024]}", "{range: [1, 2]}") ==
        ":10:16: exercises[0].hints[1].value.name: missing (required)");
  CHECK(exercises_error("value-reversed", "range: [1024, 1024]", "range: [2, 1]") ==
        ":10:37: exercises[0].hints[1].value.range: lo '2' is above hi '1'");
  CHECK(exercises_error("value-list-item", "{name: scale, range: [1024, 1024]}",
                        "[{name: scale, range: [0, 1]}, 3]") ==
        ":10:47: exercises[0].hints[1].value[1]: must be a mapping with name and range: [lo, hi]");
  CHECK(exercises_error("value-key", "{name: scale, range: [1024, 1024]}",
                        "{name: scale, range: [0, 1], x: 1}") ==
        ":10:45: exercises[0].hints[1].value: unknown key 'x' (known: name, range)");
  CHECK(exercises_error("range-one", "[2.5, 3.5]", "[2.5]") ==
        ":15:16: exercises[0].hints[2].range: must be [lo, hi], two numbers, got a list");
  CHECK(exercises_error("range-word", "[2.5, 3.5]", "[2.5, big]") ==
        ":15:22: exercises[0].hints[2].range[1]: must be a finite number, got 'big'");
  CHECK(exercises_error("range-quoted", "[2.5, 3.5]", "[2.5, \"3.5\"]") ==
        ":15:22: exercises[0].hints[2].range[1]: must be a finite number, got '3.5'");
  CHECK(exercises_error("range-inf", "[2.5, 3.5]", "[2.5, 1e999]") ==
        ":15:22: exercises[0].hints[2].range[1]: must be a finite number, got '1e999'");
  CHECK(exercises_error("range-reversed", "[2.5, 3.5]", "[3.5, 2.5]") ==
        ":15:16: exercises[0].hints[2].range: lo '3.5' is above hi '2.5'");
  CHECK(exercises_error("no-range", "        range: [2.5, 3.5]\n", "") ==
        ":14:22: exercises[0].hints[2].range: missing: an observation needs its range [lo, hi]");
  CHECK(exercises_error("range-alone", "        observation: ratio\n", "") ==
        ":14:16: exercises[0].hints[2].range: goes with an observation, and this hint names none");
}

TEST_CASE("exercises.yaml gets the quiz file's hardening, and a missing one is one line") {
  CHECK(exercises_error("alias", "lab: lab-a", "lab: &l lab-a") ==
        ":2:10: syntax: anchors and aliases (&name, *name) are not allowed in an exercises file");
  CHECK(exercises_error("tag", "check: trains", "check: !k trains") ==
        ":9:16: exercises[0].hints[1].check: the tag '!k' is not allowed (an exercises file uses no YAML "
        "tags)");
  CHECK(exercises_error("control", "scale once", "scale\x1b once") ==
        ":11:20: encoding: the control character '\\x1b' is not allowed");
  CHECK_THROWS_WITH_AS(
      runner::load_exercises("/nonexistent/exercises.yaml", fake_labs),
      "/nonexistent/exercises.yaml: cannot read the exercises file: No such file or directory",
      runner::DataError);
}

namespace {

struct FileQuestion {
  std::string id;
  std::vector<std::string> options;
  int answer;
};

// quiz.yaml's questions as the file writes them: ids, options in file order, the key's index.
std::vector<FileQuestion> project_questions() {
  std::vector<FileQuestion> out;
  for (const auto& q : YAML::LoadFile(AMP_LAB_SOURCE_DIR "/quiz.yaml")["questions"])
    out.push_back({q["id"].as<std::string>(), q["options"].as<std::vector<std::string>>(),
                   q["answer"].as<std::string>()[0] - 'a'});
  return out;
}

}  // namespace

TEST_CASE("for 1,000 learners the key of every question is shown at a, b, c and d, each 20-30% of them") {
  constexpr int kLearners = 1000;
  for (const auto& q : project_questions()) {
    CAPTURE(q.id);
    std::array<int, 4> at{};
    for (std::uint64_t seed = 0; seed < kLearners; ++seed) {
      const runner::OptionOrder order = runner::draw_order(seed * 7919 + 1, q.id, /*attempt=*/1, 4);
      REQUIRE(runner::parse_order(runner::order_letters(order), 4) == order);  // a permutation
      ++at[static_cast<size_t>(runner::shown_at(order, q.answer))];
    }
    for (size_t k = 0; k < 4; ++k) {
      CAPTURE(k);
      CHECK(at[k] >= kLearners / 5);
      CHECK(at[k] <= kLearners * 3 / 10);
    }
  }
  // And per attempt: one learner's first 1,000 attempts at a question move its key as much.
  const FileQuestion q = project_questions().at(8);
  std::array<int, 4> at{};
  for (int attempt = 1; attempt <= kLearners; ++attempt)
    ++at[static_cast<size_t>(runner::shown_at(runner::draw_order(42, q.id, attempt, 4), q.answer))];
  for (const int n : at) CHECK((n >= kLearners / 5 && n <= kLearners * 3 / 10));
}

TEST_CASE(
    "across the project's own questions (Q9 on) the key is the longest option in at most a quarter, and the "
    "shortest in at most a quarter") {
  // By chance, one option in four: more often, length alone picks the key (longest, or, once distractors
  // were lengthened past it, shortest), and a learner scores without reading the question.
  const auto questions = project_questions();
  REQUIRE(questions.size() >= 17);
  const size_t own = questions.size() - 8, most = (own + 3) / 4;
  size_t key_longest = 0, key_shortest = 0;
  for (size_t i = 8; i < questions.size(); ++i) {
    const FileQuestion& q = questions[i];
    CAPTURE(q.id);
    const size_t key = q.options[static_cast<size_t>(q.answer)].size();
    size_t longest_other = 0, shortest_other = SIZE_MAX;
    for (size_t k = 0; k < q.options.size(); ++k) {
      if (static_cast<int>(k) == q.answer) continue;
      longest_other = std::max(longest_other, q.options[k].size());
      shortest_other = std::min(shortest_other, q.options[k].size());
      // No option a third shorter or longer than the key: either is a tell.
      CHECK(q.options[k].size() * 4 >= key * 3);
      CHECK(key * 4 >= q.options[k].size() * 3);
    }
    key_longest += key >= longest_other;
    key_shortest += key <= shortest_other;
  }
  CHECK(key_longest <= most);
  CHECK(key_shortest <= most);
}

TEST_CASE(
    "the order drawn is a function of the learner's seed, the question and the attempt, and of nothing "
    "else") {
  const runner::OptionOrder first = runner::draw_order(3141592653, "fp16-overflow-op", 1, 4);
  CHECK(runner::draw_order(3141592653, "fp16-overflow-op", 1, 4) == first);  // reproducible
  // The file order is the identity; letters round-trip; a non-permutation is refused.
  CHECK(runner::file_order(4) == runner::OptionOrder{0, 1, 2, 3});
  CHECK(runner::order_letters(runner::file_order(4)) == "abcd");
  CHECK(runner::parse_order("dbca", 4) == runner::OptionOrder{3, 1, 2, 0});
  CHECK_FALSE(runner::parse_order("dbcd", 4).has_value());
  CHECK_FALSE(runner::parse_order("abc", 4).has_value());
  CHECK_FALSE(runner::parse_order("abce", 4).has_value());
  CHECK(runner::shown_at(runner::OptionOrder{3, 1, 2, 0}, 0) == 3);
  // Over 24 attempts, or 24 questions, or 24 learners, the orders differ (not one order repeated).
  std::set<std::string> by_attempt, by_question, by_seed;
  for (int k = 1; k <= 24; ++k) {
    by_attempt.insert(runner::order_letters(runner::draw_order(3141592653, "fp16-overflow-op", k, 4)));
    by_question.insert(runner::order_letters(runner::draw_order(3141592653, "q" + std::to_string(k), 1, 4)));
    by_seed.insert(
        runner::order_letters(runner::draw_order(static_cast<std::uint64_t>(k), "fp16-overflow-op", 1, 4)));
  }
  CHECK(by_attempt.size() >= 8);
  CHECK(by_question.size() >= 8);
  CHECK(by_seed.size() >= 8);
}

namespace {

// amp-lab itself, run by the shell with `env` added, stdin from `input` (a file) or /dev/null; returns its
// standard output, and its exit code in `code`.
std::string amp_lab(const std::string& env, const std::string& args, const std::string& input, int* code) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / ("amp_lab_quiz_out_" + std::to_string(::getpid()) + ".txt");
  const std::string command = "env " + env + " '" AMP_LAB_BINARY_DIR "/bin/amp-lab' quiz " + args + " < " +
                              (input.empty() ? std::string("/dev/null") : "'" + input + "'") + " > '" +
                              out.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(out);
  return text.str();
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A home of its own: the progress saved there, no lab built (each question says its lab was not built, and
// is asked all the same).
struct Home {
  std::filesystem::path dir;
  Home() {
    dir = std::filesystem::temp_directory_path() / ("amp_lab_quiz_home_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "labs");
  }
  ~Home() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string env() const {
    return "HOME='" + dir.string() + "' XDG_STATE_HOME='" + (dir / "state").string() + "' AMP_LAB_LAB_DIR='" +
           (dir / "labs").string() + "' NO_COLOR=1 AMP_LAB_QUIZ=";
  }
  std::filesystem::path state() const { return dir / "state" / "amp-lab"; }
};

}  // namespace

TEST_CASE("--answers and --json name options as shown and by id, and each round-trips through the other") {
  Home home;
  int code = 0;
  const std::string walk = "--track all --only 9,12,17 --order-seed 2718 --device cpu --quick";
  const std::string shown_json = (home.dir / "shown.json").string();
  const std::string out = amp_lab(home.env(), walk + " --answers abc --json '" + shown_json + "'", "", &code);
  INFO(out);
  const nlohmann::json shown = read_json(shown_json);
  CHECK(shown["order"] == "drawn");
  CHECK(shown["order_seed"] == 2718);
  REQUIRE(shown["questions"].size() == 3);
  const auto questions = project_questions();
  std::string ids;
  for (size_t k = 0; k < 3; ++k) {
    const auto& q = shown["questions"][k];
    CAPTURE(q.dump());
    const FileQuestion& file = questions.at(static_cast<size_t>(q["number"].get<int>() - 1));
    // The order is the one drawn for this seed, question and first attempt.
    CHECK(q["order"] == runner::order_letters(runner::draw_order(2718, file.id, 1, 4)));
    CHECK(q["attempt"] == 1);
    const std::string order = q["order"];
    CHECK(q["answer"] == std::string(1, "abc"[k]));     // as typed: the letter shown
    CHECK(q["answer_id"] == std::string(1, order[k]));  // the option shown there
    CHECK(q["correct_id"] == std::string(1, static_cast<char>('a' + file.answer)));
    const char correct = static_cast<char>('a' + order.find(static_cast<char>('a' + file.answer)));
    CHECK(q["correct"] == std::string(1, correct));
    // The screen says the letters shown: the answer line, and the "Not x)" of the learner's option.
    const std::string key_text = file.options[static_cast<size_t>(file.answer)];
    CHECK(out.find(std::string("The answer is ") + correct + ") " + key_text.substr(0, 20)) !=
          std::string::npos);
    if (q["answer_id"] != q["correct_id"]) {
      const std::string mine = file.options[static_cast<size_t>(order[k] - 'a')];
      CHECK(out.find(std::string("Not ") + "abc"[k] + ") " + mine.substr(0, 20)) != std::string::npos);
    }
    ids += q["answer_id"].get<std::string>();
  }
  // The same answers by id give the same letters shown.
  const std::string by_id_json = (home.dir / "by_id.json").string();
  amp_lab(home.env(), walk + " --answer-ids " + ids + " --json '" + by_id_json + "'", "", &code);
  const nlohmann::json by_id = read_json(by_id_json);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(by_id["questions"][k]["answer"] == shown["questions"][k]["answer"]);
    CHECK(by_id["questions"][k]["answer_id"] == shown["questions"][k]["answer_id"]);
    CHECK(by_id["questions"][k]["order"] == shown["questions"][k]["order"]);
  }
  // Bad usage is one line each.
  CHECK(amp_lab(home.env(), walk + " --answers abc --answer-ids abc", "", &code).find("do not go together") !=
        std::string::npos);
  CHECK(code == 2);
  CHECK(amp_lab(home.env(), walk + " --order-seed x1 --answers abc", "", &code).find("--order-seed: 'x1'") !=
        std::string::npos);
  CHECK(code == 2);
}

TEST_CASE("--file-order shows quiz.yaml's order, and its letters are the ids") {
  Home home;
  int code = 0;
  const std::string json = (home.dir / "file.json").string();
  const std::string out =
      amp_lab(home.env(),
              "--track all --only 9,17 --file-order --device cpu --quick --answers bd --json '" + json + "'",
              "", &code);
  INFO(out);
  const nlohmann::json j = read_json(json);
  CHECK(j["order"] == "file");
  const auto questions = project_questions();
  for (const auto& q : j["questions"]) {
    CHECK(q["order"] == "abcd");
    CHECK(q["answer"] == q["answer_id"]);
    CHECK(q["correct"] == q["correct_id"]);
    // Shown in the file's order: each option's line in turn.
    const FileQuestion& file = questions.at(static_cast<size_t>(q["number"].get<int>() - 1));
    size_t at = 0;
    for (size_t k = 0; k < 4; ++k) {
      at =
          out.find(std::string("  ") + static_cast<char>('a' + k) + ") " + file.options[k].substr(0, 30), at);
      CHECK(at != std::string::npos);
    }
  }
  CHECK(out.find("The answer is b) ") != std::string::npos);  // Q9's key, b in quiz.yaml
}

TEST_CASE("a typed walk saves each attempt with its order, which the seed and attempt number draw again") {
  Home home;
  int code = 0;
  const std::filesystem::path input = home.dir / "typed.txt";
  std::ofstream(input) << "a\nc\n";
  const std::string walk = "--track all --only 10,15 --device cpu --quick";
  const std::string first = amp_lab(home.env(), walk, input.string(), &code);
  INFO(first);
  std::ofstream(input) << "b\ns\n";
  const std::string second = amp_lab(home.env(), walk, input.string(), &code);
  INFO(second);
  const nlohmann::json saved = read_json(home.state() / "progress.json");
  CAPTURE(saved.dump());
  REQUIRE(saved["learner"]["order_seed"].is_number_unsigned());
  const std::uint64_t seed = saved["learner"]["order_seed"];
  const auto questions = project_questions();
  const std::map<int, std::string> tracks{{10, "recipes"}, {15, "practice"}};
  const std::map<int, std::string> typed{{10, "ab"}, {15, "cs"}};
  for (const auto& [number, track] : tracks) {
    CAPTURE(number);
    const auto& attempts = saved["quiz"][track]["questions"][std::to_string(number)]["attempts"];
    REQUIRE(attempts.size() == 2);  // the second walk added to the first
    for (size_t k = 0; k < 2; ++k) {
      const auto& a = attempts[k];
      const std::string id = questions.at(static_cast<size_t>(number - 1)).id;
      // The order saved is the one the learner's seed draws for this question and attempt.
      CHECK(a["order"] == runner::order_letters(runner::draw_order(seed, id, static_cast<int>(k) + 1, 4)));
      CHECK(a["walk"] == "all");
      CHECK(a["seconds"].is_number_integer());
      const char key = typed.at(number)[k];
      if (key == 's') {
        CHECK(a["outcome"] == "skipped");
        CHECK_FALSE(a.contains("answer"));
        continue;
      }
      CHECK(a["shown"] == std::string(1, key));
      const std::string order = a["order"];
      CHECK(a["answer"] == std::string(1, order[static_cast<size_t>(key - 'a')]));
    }
  }
}
