// Small terminal charts: a log2-magnitude histogram with marked limits, and a sparkline.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>  // not <torch/types.h>: see lab/context.h

#include "lab/report.h"

namespace lab {

struct Marker {
  int exponent;       // marks the row holding 2^exponent
  std::string label;  // "fp16 smallest subnormal 2^-24"
};

// Histogram of floor(log2|x|) over [lo, hi) in rows of `step` exponents; values below lo and at or
// above hi go into the first and last rows, exact zeros into a row of their own.
Chart log2_histogram(std::string title, const at::Tensor& values, int lo, int hi, int step,
                     const std::vector<Marker>& markers, int bar_width = 32);

// One glyph per value, ▁ (lowest) to █ (highest); log2 scale suits a loss scale.
Chart sparkline(std::string title, const std::vector<double>& values, bool log2_scale = false);

// At most `max_points` of `values` for a chart of that width: every k-th one, from the first.
struct Thinned {
  std::vector<double> values;
  size_t every;  // k
};
Thinned every_kth(const std::vector<double>& values, size_t max_points);

}  // namespace lab
