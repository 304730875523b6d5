// quiz.yaml: the questions, their options, the correct answer, the lab that shows it, and an explanation
// whose {placeholders} are filled with that lab's measured observations.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace runner {

// "quiz.yaml:12:5: questions[2].answer: must be one letter from a to d, got 'e'"
struct QuizError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Question {
  int number = 0;  // 1-based position in the file
  std::string id;
  std::string lab;
  std::string prompt;
  std::vector<std::string> options;
  int answer = 0;  // index into options
  std::string explanation;                     // why the answer is right
  std::map<int, std::string> why_not;          // option index -> why that wrong option is wrong
  std::string hint;
};

struct Quiz {
  std::string title;
  std::string intro;
  std::vector<Question> questions;
};

// What a lab offers the quiz: the observation keys it promises. nullopt: no such lab.
using LabLookup = std::function<std::optional<std::vector<std::string>>(const std::string& lab_id)>;

// Loads and validates: required fields, 4 options with exactly one correct (a letter in range), the lab
// exists, unique ids, every {placeholder} in explanation, why_not and hint is an observation the lab
// provides. why_not (optional) maps the letters of wrong options to why each is wrong.
// {key} stands for the observation as the lab prints it, {key:value} for its bare number and unit.
Quiz load_quiz(const std::string& path, const LabLookup& labs);

// The {names} used in a template, in order of appearance.
std::vector<std::string> placeholders(const std::string& text);
// Replaces each {name} by values.at(name); an unknown name is an error (validation should prevent it).
std::string fill(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace runner
