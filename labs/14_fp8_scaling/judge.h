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

// quantize() on crafted tensors, each rule reached on its own: the cases whose values, inverse scales or
// reported clipped share differ from the float64 step (name, what differed), in order, of `cases` run.
struct QuantizeVerdict {
  std::vector<std::pair<std::string, std::string>> wrong;
  size_t cases = 0;
};
QuantizeVerdict judge_quantize();

}  // namespace lab14::judge
