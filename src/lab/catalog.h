// Every lab, declared once (labs/catalog.cpp): who it is, its number, id, track, title and neutral
// heading, and the checks --flip must make fail. Everything else is derived from the declaration or checked
// against it: the folder (labs/NN_<id>/), the executable, the report's id and title, quiz.yaml's question
// N (its lab and track). What a lab reports is not listed here: tests/test_labs.cpp holds the keys
// quiz.yaml and exercises.yaml name, and flip_fails, to the lab's real --json. Needs no LibTorch, so the
// runner and the tests can read it cheaply.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lab {

struct LabDecl {
  int number = 0;       // the quiz question it backs, and the file's two-digit prefix
  std::string id;       // "amp-api": `amp-lab run amp-api`, quiz.yaml's `lab: amp-api`
  std::string track;    // the quiz track its question belongs to
  std::string title;    // states what the lab shows (the answer): shown after the learner answers
  std::string heading;  // neutral: what is measured, not what it proves; shown before the question
  std::vector<std::string> flip_fails;  // the checks that --flip makes fail; the others still hold
  bool seeds_in_quick_mode = false;     // the seed sweep runs --quick: the default mode is too slow for it

  std::string stem() const;        // "06_amp_api"
  std::string folder() const;      // "labs/06_amp_api": the lab's files
  std::string source() const;      // "labs/06_amp_api/lab.cpp": the problem, measure and report
  std::string amp_source() const;  // "labs/06_amp_api/amp.cpp": the AMP code a learner copies
  std::string executable() const;  // "lab06_amp_api"
};

// Every lab, in question order.
const std::vector<LabDecl>& catalog();

// By id ("loss-scaling"), id with underscores ("loss_scaling"), number ("2" or "02"), file stem
// ("02_loss_scaling") or executable ("lab02_loss_scaling"); nullptr when none matches.
const LabDecl* find_decl(std::string_view name);

// The lab whose id or stem is closest to `name` (edit distance), for "did you mean ...?"; nullptr when
// nothing is close.
const LabDecl* closest_decl(std::string_view name);

}  // namespace lab
