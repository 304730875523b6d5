#include "lab/charts.h"

#include <algorithm>
#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/floor.h>
#include <ATen/ops/log2.h>
#include <fmt/format.h>

#include "lab/text.h"

namespace lab {

Chart log2_histogram(std::string title, const at::Tensor& values, int lo, int hi, int step,
                     const std::vector<Marker>& markers, int bar_width) {
  at::Tensor v = values.detach().to(at::kCPU, at::kDouble).abs().flatten();
  const int64_t total = v.numel();
  const int64_t zeros = (v == 0).sum().item<int64_t>();
  at::Tensor nz = v.masked_select(v > 0);
  at::Tensor e = at::floor(at::log2(nz)).clamp(lo, hi - 1).to(at::kLong);
  const int rows = (hi - lo + step - 1) / step;
  at::Tensor counts = at::bincount((e - lo).div(step, /*rounding_mode=*/"floor"),
                                   /*weights=*/std::nullopt, /*minlength=*/rows);

  Chart chart{std::move(title), {}, nlohmann::json::object()};
  std::vector<int64_t> c(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + rows);
  const int64_t peak = std::max<int64_t>({int64_t{1}, zeros, *std::max_element(c.begin(), c.end())});
  auto bar = [&](int64_t n) {
    int len = static_cast<int>(std::lround(static_cast<double>(n) / peak * bar_width));
    if (n > 0 && len == 0) len = 1;  // a non-empty row is never invisible
    std::string b;
    for (int i = 0; i < len; ++i) b += "█";
    return pad_right(b, bar_width);
  };
  auto share = [&](int64_t n) { return total ? static_cast<double>(n) / total : 0.0; };
  chart.lines.push_back(fmt::format("{:>15}  {} {:>6}", "exact 0", bar(zeros), percent(share(zeros))));
  for (int r = rows - 1; r >= 0; --r) {
    const int a = lo + r * step, b = std::min(hi, a + step);
    std::string range = r == 0          ? fmt::format("< 2^{}", b)
                        : r == rows - 1 ? fmt::format(">= 2^{}", a)
                                        : fmt::format("[2^{},2^{})", a, b);
    std::string marks;
    for (const auto& m : markers)
      if (m.exponent >= a && m.exponent < b) marks += (marks.empty() ? "  <- " : "; ") + m.label;
    chart.lines.push_back(fmt::format("{:>15}  {} {:>6}{}", range, bar(c[r]), percent(share(c[r])), marks));
  }
  chart.data = {{"lo", lo}, {"hi", hi}, {"step", step}, {"zeros", zeros}, {"total", total}, {"counts", c}};
  return chart;
}

Chart sparkline(std::string title, const std::vector<double>& values, bool log2_scale) {
  static const char* glyphs[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::vector<double> y(values);
  if (log2_scale)
    for (double& v : y) v = std::log2(std::max(v, 1e-300));
  Chart chart{std::move(title), {}, {{"values", values}, {"log2_scale", log2_scale}}};
  if (y.empty()) return chart;
  const auto [mn, mx] = std::minmax_element(y.begin(), y.end());
  std::string line;
  for (double v : y) {
    int level = *mx > *mn ? static_cast<int>(std::lround((v - *mn) / (*mx - *mn) * 7)) : 3;
    line += glyphs[std::clamp(level, 0, 7)];
  }
  auto fmt_v = [&](double v) { return log2_scale ? fmt::format("2^{:g}", v) : num(v); };
  chart.lines.push_back(line + fmt::format("  (min {}, max {})", fmt_v(*mn), fmt_v(*mx)));
  return chart;
}

Thinned every_kth(const std::vector<double>& values, size_t max_points) {
  Thinned t{{}, std::max<size_t>(1, (values.size() + max_points - 1) / max_points)};
  for (size_t i = 0; i < values.size(); i += t.every) t.values.push_back(values[i]);
  return t;
}

}  // namespace lab
