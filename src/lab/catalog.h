// Every lab, declared once (labs/catalog.cpp): who it is, its number, id, track, title and neutral
// heading, the checks --flip must make fail, and the floating types it runs (whether --dtype chooses one).
// Everything else is derived from the declaration or checked against it: the folder (labs/NN_<id>/), the
// executable, the report's id and title, quiz.yaml's question N (its lab and track). What a lab reports is
// not listed here: tests/test_labs.cpp holds the keys quiz.yaml and exercises.yaml name, and flip_fails, to
// the lab's real --json. Needs no LibTorch, so the runner and the tests can read it cheaply.
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
  // The low-precision types it runs, as its report's `dtypes` names them ("fp16", "E4M3 and E5M2"; in a
  // lab that takes --dtype, "fp16 or bf16"); its --help says them, and so does its refusal of --dtype.
  std::string types;
  // What --dtype fp16|bf16 chooses in this lab and its default: the option's line in the lab's --help.
  // Empty for a lab whose question fixes its types: it refuses --dtype in one line (exit 2).
  std::string dtype_choice;

  bool takes_dtype() const { return !dtype_choice.empty(); }

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

// "01, 05 and 08": the numbers of the labs that take --dtype, for the texts that point to them.
std::string labs_taking_dtype();

}  // namespace lab
