// Lab 14's judge of quantize(): the learner's Fp8Scale::quantize() (amp.cpp, or an exercise's file in its
// place) on crafted tensors, against the same step written here in float64. lab.cpp runs it and reports
// what it found as the check quantize-matches-float64.
#include "judge.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lab/libtorch.h"
#include "lab/text.h"

namespace lab14::judge {

Fp8Scale scale_for(bool grad, Scaling mode) {
  if (grad) return {.mode = mode, .dtype = torch::kFloat8_e5m2, .max = kE5M2Max};
  return {.mode = mode};
}

namespace {

// The training runs read quantize() only through losses and shares, where a margin, a history's length or
// a negative amax barely shows. These cases reach each rule directly: fixed tensors, the learner's
// quantize() against the same step written here in float64.
constexpr int64_t kCraftedSize = 48;

// 48 values from amax down over 17.8 powers of two (past E4M3's range below 448), alternating in sign; the
// largest |value| is +amax, or -amax when `negative` (the largest positive is then 0.77 amax).
torch::Tensor crafted(double amax, bool negative) {
  const torch::Tensor i = torch::arange(kCraftedSize, torch::kDouble);
  const torch::Tensor sign = 1 - 2 * torch::remainder(i, 2);
  return ((negative ? -amax : amax) * sign * torch::exp2(-0.37 * i)).to(torch::kFloat);
}

struct QuantizeCase {
  std::string name;
  Scaling mode = Scaling::Current;
  bool e5m2 = false;
  double margin = 0;
  std::vector<double> amaxes;  // one crafted tensor per call (all zeros where the amax is 0)
  bool negative = false;
};

// Delayed scaling's scale at each call, in float64: top / the largest amax of the `length` calls before
// (the first call: its own), each amax at least 1e-30. With `own`, this call's amax joins the window;
// without `update`, the window stays the first call's. The wrong variants name what a learner's did.
std::vector<double> delayed_scales(const std::vector<double>& amaxes, double top, size_t length,
                                   bool update = true, bool own = false) {
  std::vector<double> scales;
  for (size_t k = 0; k < amaxes.size(); ++k) {
    double window = std::max(amaxes[0], 1e-30);
    for (size_t j = k > length ? k - length : 0; update && j < k; ++j) window = std::max(window, amaxes[j]);
    if (own) window = std::max(window, amaxes[k]);
    scales.push_back(top / window);
  }
  return scales;
}

// A delayed case that differs: which misreading of the history the learner's scales `got` follow, if one
// (its kReadings name and its words; empty when none does).
std::pair<std::string, std::string> delayed_reading(const QuantizeCase& c, const std::vector<double>& got,
                                                    const std::vector<double>& want, double top, double max) {
  const auto follows = [&](const std::vector<double>& scales) {
    for (size_t k = 0; k < got.size(); ++k)
      if (!(std::abs(got[k] / scales[k] - 1) <= kScaleTol)) return false;
    return true;
  };
  const std::string own = "this call's amax is in the scale, not only the history's";
  struct Reading {
    std::vector<double> scales;
    std::string name, words;
  };
  std::vector<Reading> readings = {
      {want, "right_scales", "the scales are right, the values are not"},
      {delayed_scales(c.amaxes, top, 0, true, true), "own_amax_only",
       "the scale follows each call's own amax (current scaling)"},
      // pushed before the scale was taken
      {delayed_scales(c.amaxes, top, kHistory - 1, true, true), "own_amax_joined", own},
      {delayed_scales(c.amaxes, top, kHistory, true, true), "own_amax_joined", own},  // max(history, amax)
      {delayed_scales(c.amaxes, top, kHistory, false), "stale_history",
       "the history never takes a new amax"}};
  for (size_t length : {kHistory - 1, kHistory + 1})
    readings.push_back({delayed_scales(c.amaxes, top, length), "wrong_length",
                        fmt::format("the history holds {} amaxes, not {}", length, kHistory)});
  if (c.margin != 0)
    readings.push_back(
        {delayed_scales(c.amaxes, max, kHistory), "no_margin", "the scale is computed without the margin"});
  for (const auto& r : readings)
    if (follows(r.scales)) return {r.name, r.words};
  return {};
}

// What judge_case found on one case: `why` empty when quantize() matched the float64 step at every call.
struct CaseVerdict {
  std::string why;
  bool unsaturated = false, share_wrong = false;  // at the first call that differs
  std::string reading;                            // kReadings' name of a delayed case's misreading, or ""
};

// The float64 reference's scale at each call of case `c`: `top` over the amax seen (delayed: the history's).
std::vector<double> reference_scales(const QuantizeCase& c, double top) {
  if (c.mode == Scaling::Delayed) return delayed_scales(c.amaxes, top, kHistory);
  std::vector<double> want;
  for (double a : c.amaxes) want.push_back(top / std::max(a, 1e-30));
  return want;
}

// amp.cpp's scale for case `c`, reporting each call's share beyond max into `shares`.
Fp8Scale judged_scale(const QuantizeCase& c, std::vector<double>* shares) {
  Fp8Scale s = scale_for(c.e5m2, c.mode);
  s.margin = c.margin;
  s.saturated = shares;
  return s;
}

// What quantize() did on one case.
CaseVerdict judge_case(const QuantizeCase& c) {
  const double max = c.e5m2 ? kE5M2Max : kE4M3Max, top = max / std::exp2(c.margin);
  const double tiny = c.e5m2 ? std::exp2(-16) : std::exp2(-9);  // the smallest subnormal
  const double step = c.e5m2 ? 0.25 : 0.125;                    // one FP8 step, relative (2^-mantissa)
  const auto dtype = c.e5m2 ? torch::kFloat8_e5m2 : torch::kFloat8_e4m3fn;
  const std::vector<double> want = reference_scales(c, top);
  std::vector<double> shares;  // what quantize() reported of each call's scaled values beyond max
  Fp8Scale s = judged_scale(c, &shares);
  std::vector<double> got;  // the learner's inverse scales, as scales
  CaseVerdict v;            // v.why: the first call that differs
  std::string& first = v.why;
  for (size_t k = 0; k < c.amaxes.size(); ++k) {
    const torch::Tensor t = crafted(c.amaxes[k], c.negative);
    std::pair<torch::Tensor, torch::Tensor> out;
    try {
      out = s.quantize(t);
    } catch (const std::exception& e) {
      return {fmt::format("call {}: quantize() threw: {}", k, std::string(e.what()).substr(0, 120))};
    }
    const auto& [q, inv] = out;
    if (q.scalar_type() != dtype || !q.sizes().equals(t.sizes()) || inv.numel() != 1)
      return {fmt::format("call {}: returned {} of {} values and an inverse scale of {}, want {} of {} and 1",
                          k, c10::toString(q.scalar_type()), q.numel(), inv.numel(), c10::toString(dtype),
                          t.numel())};
    const double inv_got = inv.item<double>();
    got.push_back(1 / inv_got);
    // The reference: scaled in float64, saturated at +-max, then cast (through fp32, as the learner's is).
    const bool zero = c.amaxes[k] == 0;
    const torch::Tensor ref =
        (t.to(torch::kDouble) * want[k]).clamp(-max, max).to(torch::kFloat).to(dtype).to(torch::kDouble);
    const torch::Tensor q64 = q.to(torch::kDouble);
    // Written so that NaN fails: a value is right only when it is within one FP8 step of the reference.
    const torch::Tensor off = ~((q64 - ref).abs() <= (ref.abs() * step).clamp_min(tiny));
    const int64_t wrong = off.sum().item<int64_t>();
    const int64_t unsaturated = (~torch::isfinite(q64) & (ref.abs() == max)).sum().item<int64_t>();
    const bool inv_ok =
        zero ? std::isfinite(inv_got) && inv_got > 0 : std::abs(inv_got * want[k] - 1) <= kScaleTol;
    // The share beyond max it reported (the lab's instrument of clipping): E4M3's cast saturates by itself in
    // this PyTorch, so for E4M3 nothing else shows what was clipped. One value either way is rounding.
    const double beyond =
        ((t.to(torch::kDouble) * want[k]).abs() > max).to(torch::kDouble).mean().item<double>();
    const double reported = shares.size() == k + 1 ? shares[k] : std::nan("");
    const bool share_ok = std::abs(reported - beyond) <= 1.0 / kCraftedSize;
    if (first.empty() && (wrong > 0 || !inv_ok || !share_ok)) {
      first = fmt::format("call {}: inverse scale {}, want {}; {} of {} values off", k, lab::sci(inv_got),
                          zero ? "a finite one > 0" : lab::sci(1 / want[k]), wrong, kCraftedSize);
      if (unsaturated > 0) first += fmt::format(", {} beyond max not saturated (inf or NaN)", unsaturated);
      v.unsaturated = unsaturated > 0;
      v.share_wrong = !share_ok;
      if (!share_ok)
        first += fmt::format("; {} reported beyond max, want {}", lab::percent(reported, 1),
                             lab::percent(beyond, 1));
    }
  }
  if (first.empty() || c.mode != Scaling::Delayed) return v;
  const auto [name, words] = delayed_reading(c, got, want, top, max);
  v.reading = name;
  if (!words.empty()) first += ": " + words;
  return v;
}

// Each rule reached on its own: both formats' maxima, a margin, a negative amax, all zeros (current); a
// spike that delayed scaling must clip at each format's max (E4M3's 448 too, where only the reported share
// shows it) and forget after kHistory calls, a negative amax, a growing tensor with a margin, all zeros
// (delayed). Keeps the wrong cases, in this order.
}  // namespace

QuantizeVerdict judge_quantize() {
  QuantizeVerdict v;
  std::vector<double> spike(kHistory + 4, 1e-4), growing;
  spike[1] = 3e-2;  // 300x: beyond E5M2's max under the history's scale; gone from a 16-long one at call 18
  for (int k = 0; k < 8; ++k) growing.push_back(1e-2 * std::pow(1.5, k));
  const QuantizeCase cases[] = {
      {.name = "E4M3 current", .amaxes = {3.7e-3}},
      {.name = "E5M2 current", .e5m2 = true, .amaxes = {2.5e-6}},
      {.name = "E4M3 margin 3", .margin = 3, .amaxes = {0.9}},
      {.name = "E5M2 margin 3", .e5m2 = true, .margin = 3, .amaxes = {40}},
      {.name = "negative amax", .amaxes = {5e-2}, .negative = true},
      {.name = "all zeros", .amaxes = {0}},
      {.name = "E5M2 delayed, a spike at call 1", .mode = Scaling::Delayed, .e5m2 = true, .amaxes = spike},
      {.name = "E4M3 delayed, a spike at call 1", .mode = Scaling::Delayed, .amaxes = spike},
      {.name = "E4M3 delayed, negative amax",
       .mode = Scaling::Delayed,
       .amaxes = {5e-2, 2e-2, 8e-2},
       .negative = true},
      {.name = "E4M3 delayed, margin 2, growing", .mode = Scaling::Delayed, .margin = 2, .amaxes = growing},
      {.name = "E5M2 delayed, all zeros", .mode = Scaling::Delayed, .e5m2 = true, .amaxes = {0, 0, 0}}};
  v.cases = std::size(cases);
  for (size_t i = 0; i < std::size(cases); ++i) {
    const CaseVerdict c = judge_case(cases[i]);
    if (c.why.empty()) continue;
    v.wrong.emplace_back(cases[i].name, c.why);
    if (v.first_wrong < 0) v.first_wrong = static_cast<int>(i);
    v.unsaturated_cases += c.unsaturated;
    v.share_wrong_cases += c.share_wrong;
    if (!c.reading.empty()) v.readings.push_back(c.reading);
  }
  return v;
}

}  // namespace lab14::judge
