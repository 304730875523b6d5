// Lab 14's judge (judge.cpp): what exists only to judge a learner's quantize(), apart from the experiment.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "amp.h"

namespace lab14::judge {

constexpr double kScaleTol = 1e-5;  // relative: the learner's fp32 scale and its reciprocal round twice

// The scale settings of a tensor: an output gradient's are E5M2's, an input's or a weight's E4M3's.
Fp8Scale scale_for(bool grad, Scaling mode);

// The misreadings of a delayed history that a wrong case's scales can follow, as the check's values name
// them ("reads_<name>"): the scales right and the values not, the scale of each call's own amax (current
// scaling), this call's amax in the scale, a history never updated, of the wrong length, without the margin.
inline const std::vector<std::string> kReadings = {"right_scales",  "own_amax_only", "own_amax_joined",
                                                   "stale_history", "wrong_length",  "no_margin"};

// quantize() on crafted tensors, each rule reached on its own: the cases whose values, inverse scales or
// reported clipped share differ from the float64 step (name, what differed), in order, of `cases` run.
struct QuantizeVerdict {
  std::vector<std::pair<std::string, std::string>> wrong;
  size_t cases = 0;
  // The same as numbers: the index (in judge.cpp's order of cases) of the first wrong case, -1 when none;
  // how many wrong cases left a value beyond max unsaturated (inf or NaN) or reported another share beyond
  // max than the float64 step; and which misreadings of kReadings the wrong delayed cases follow.
  int first_wrong = -1;
  int unsaturated_cases = 0, share_wrong_cases = 0;
  std::vector<std::string> readings;
};
QuantizeVerdict judge_quantize();

}  // namespace lab14::judge
