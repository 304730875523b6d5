// amp::stochastic_round_, amp::stochastic_round_add_ and amp::kahan_add_ (src/amp/bf16_update.h) on the CPU:
// the two bf16 neighbours, unbiasedness against bounds derived from the draw count, seeded reproducibility,
// the special values, the refused calls, and the lab's case (1000 updates of 1e-4 to a bf16 weight of 1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ATen/record_function.h>

#include "amp/bf16_update.h"
#include "amp/device_caps.h"
#include "lab/libtorch.h"

namespace test_bf16_update {

namespace {

constexpr double kGapAt1 = 1.0 / 128;  // bf16's spacing in [1, 2): 2^-7
constexpr int64_t kDraws = 65536;      // draws of one value in the unbiasedness tests
constexpr double kSigmas = 5.0;        // bounds at 5 standard deviations: a seeded run, far from the edge

// A generator of `device` seeded with `seed`, a copy of the device's default one (any device type).
at::Generator seeded(uint64_t seed, torch::Device device = torch::kCPU) {
  at::Generator g = at::globalContext().defaultGenerator(device).clone();
  g.set_current_seed(seed);
  return g;
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

torch::Tensor rounded(const torch::Tensor& src, std::optional<at::Generator> gen) {
  torch::Tensor dst = torch::empty(src.sizes(), src.options().dtype(torch::kBFloat16));
  amp::stochastic_round_(dst, src, std::move(gen));
  return dst;
}

// The bf16 values below and above a finite x, in double (exact): bf16 keeps 8 significant bits, so the
// spacing of x's binade [2^(e-1), 2^e) is 2^(e-8), and never below the subnormal spacing 2^-133.
std::pair<double, double> neighbours(double x) {
  int e = 0;
  std::frexp(x, &e);
  const double gap = std::ldexp(1.0, std::max(e - 8, -133));
  const double lo = std::floor(x / gap) * gap;
  return {lo, lo + gap};
}

// Bound on a share measured over n draws of probability p: kSigmas standard deviations.
double share_bound(double p, int64_t n) {
  return kSigmas * std::sqrt(p * (1 - p) / static_cast<double>(n));
}

// The share of `dst` (bf16) equal to `value`.
double share_equal(const torch::Tensor& dst, double value) {
  return dst.to(torch::kDouble).eq(value).to(torch::kDouble).mean().item<double>();
}

// Counts the operators the dispatcher runs on this thread while it lives.
class OpCounter {
 public:
  OpCounter() {
    names_.clear();
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpCounter::on_start));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  int64_t count(const std::string& name) const { return std::count(names_.begin(), names_.end(), name); }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    names_.emplace_back(fn.name());
    return nullptr;
  }
  static inline thread_local std::vector<std::string> names_;
  at::CallbackHandle handle_;
};

}  // namespace

TEST_CASE("stochastic rounding leaves values exactly representable in bf16 unchanged") {
  torch::manual_seed(1);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -2.0f,
                            0.5f,
                            from_bits(0x7F7F0000u) /* bf16 max */,
                            from_bits(0x00010000u) /* smallest bf16 subnormal */,
                            from_bits(0x00800000u)};
  const torch::Tensor src =
      torch::cat({torch::randn({4096}).mul_(1e3).to(torch::kBFloat16).to(torch::kFloat),
                  torch::tensor(std::vector<float>(std::begin(specials), std::end(specials)))});
  for (uint64_t seed : {1, 2, 3}) {
    const torch::Tensor dst = rounded(src, seeded(seed));
    // Bit patterns, so that -0 and +0 are told apart.
    CHECK(torch::equal(dst.view(torch::kShort), src.to(torch::kBFloat16).view(torch::kShort)));
  }
}

TEST_CASE("every stochastically rounded value is one of its two bf16 neighbours, and both occur") {
  torch::manual_seed(2);
  constexpr int64_t kValues = 4096, kRepeats = 16;  // each value rounded 16 times
  const torch::Tensor values = torch::randn({kValues}).mul_(torch::exp2(torch::randint(-40, 40, {kValues})));
  const torch::Tensor src = values.repeat({kRepeats});
  const torch::Tensor dst = rounded(src, seeded(3)).to(torch::kDouble).contiguous();
  const torch::Tensor src64 = src.to(torch::kDouble).contiguous();
  const double* s = src64.data_ptr<double>();
  const double* d = dst.data_ptr<double>();
  int64_t exact = 0, wrong = 0, lower = 0, upper = 0;
  for (int64_t i = 0; i < src.numel(); ++i) {
    const auto [lo, hi] = neighbours(s[i]);
    if (lo == s[i]) ++exact;
    if (d[i] == lo)
      ++lower;
    else if (d[i] == hi)
      ++upper;
    else
      ++wrong;
  }
  REQUIRE(exact == 0);  // none of these random values is a bf16 value: each has two neighbours
  CHECK(wrong == 0);
  CHECK(lower > 0);
  CHECK(upper > 0);
  CHECK(lower + upper == src.numel());
}

TEST_CASE(
    "stochastic rounding is unbiased: 65536 draws of 1 + 2^-10 average to it, rounding up 1/8 of the time") {
  // 1 + 2^-10 lies between bf16's 1 and 1 + 2^-7 at 1/8 of the gap. With n = 65536 draws the share rounded
  // up has standard deviation sqrt(p(1-p)/n) = 0.0013 for p = 1/8, the mean gap * that = 1.0e-5; the bounds
  // are 5 of them (0.0065 and 5.1e-5).
  const double x = 1.0 + std::ldexp(1.0, -10), p = 0.125;
  const torch::Tensor dst = rounded(torch::full({kDraws}, static_cast<float>(x)), seeded(4));
  const double up = share_equal(dst, 1.0 + kGapAt1);
  const double mean = dst.to(torch::kDouble).mean().item<double>();
  MESSAGE("share rounded up " << up << " (expected 0.125), mean - x = " << mean - x);
  CHECK(share_equal(dst, 1.0) + up == 1.0);
  CHECK(std::abs(up - p) <= share_bound(p, kDraws));
  CHECK(std::abs(mean - x) <= kGapAt1 * share_bound(p, kDraws));
}

TEST_CASE("a seeded generator makes stochastic rounding reproducible, and another seed changes it") {
  torch::manual_seed(5);
  const torch::Tensor src = torch::randn({4096});
  const torch::Tensor a = rounded(src, seeded(42)), b = rounded(src, seeded(42)),
                      c = rounded(src, seeded(43));
  CHECK(torch::equal(a.view(torch::kShort), b.view(torch::kShort)));
  const int64_t differ = a.ne(c).sum().item<int64_t>();
  MESSAGE(differ << " of 4096 values differ between seeds 42 and 43");
  CHECK(differ > 1000);  // about a third: two draws disagree with probability 2p(1-p), 1/3 averaged over p
  // One generator advances: its second call draws anew.
  at::Generator g = seeded(42);
  const torch::Tensor first = rounded(src, g), second = rounded(src, g);
  CHECK(torch::equal(first.view(torch::kShort), a.view(torch::kShort)));
  CHECK_FALSE(torch::equal(second.view(torch::kShort), a.view(torch::kShort)));
  // Without a generator it draws from the default one, which torch::manual_seed seeds.
  torch::manual_seed(7);
  const torch::Tensor d1 = rounded(src, std::nullopt);
  torch::manual_seed(7);
  CHECK(torch::equal(d1.view(torch::kShort), rounded(src, std::nullopt).view(torch::kShort)));
}

TEST_CASE("stochastic rounding keeps inf and NaN, and rounds negatives, zeros and subnormals") {
  const float inf = std::numeric_limits<float>::infinity();
  // NaNs of every kind: quiet, a payload only in the low 16 bits (truncation alone would make it inf), and
  // the largest patterns of both signs (which the random carry would overflow).
  // Made from bit patterns: torch::tensor of floats (or of int32s) did not keep 0x7F800001.
  std::vector<uint32_t> patterns = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu,
                                    0xFFFFFFFFu, 0xFF800001u, 0x00000000u, 0x80000000u};
  const torch::Tensor special =
      torch::from_blob(patterns.data(), {9}, torch::kInt).repeat({1000}).view(torch::kFloat);
  REQUIRE(special.view(torch::kInt)[3].item<int32_t>() == 0x7F800001);
  const torch::Tensor out = rounded(special, seeded(6)).to(torch::kFloat).view({1000, 9});
  CHECK(out.select(1, 0).eq(inf).all().item<bool>());
  CHECK(out.select(1, 1).eq(-inf).all().item<bool>());
  CHECK(out.slice(1, 2, 7).isnan().all().item<bool>());
  CHECK(out.slice(1, 7, 9).eq(0).all().item<bool>());
  CHECK(torch::equal(out.select(1, 8).view(torch::kInt),
                     torch::full({1000}, from_bits(0x80000000u)).view(torch::kInt)));

  // A negative value rounds its magnitude: -(1 + 2^-10) to -1 or -(1 + 2^-7), the latter 1/8 of the time.
  const torch::Tensor neg = rounded(torch::full({kDraws}, -(1.0f + std::ldexp(1.0f, -10))), seeded(7));
  const double away = share_equal(neg, -(1.0 + kGapAt1));
  CHECK(share_equal(neg, -1.0) + away == 1.0);
  CHECK(std::abs(away - 0.125) <= share_bound(0.125, kDraws));

  // fp32 subnormal 2.25 * 2^-133, between bf16 subnormals 2 * 2^-133 and 3 * 2^-133, a quarter of the way.
  const double tiny = std::ldexp(1.0, -133);
  const torch::Tensor sub = rounded(torch::full({kDraws}, static_cast<float>(2.25 * tiny)), seeded(8));
  const double sub_up = share_equal(sub, 3 * tiny);
  MESSAGE("negative: share away from zero " << away << "; subnormal: share up " << sub_up
                                            << " (expected 0.25)");
  CHECK(share_equal(sub, 2 * tiny) + sub_up == 1.0);
  CHECK(std::abs(sub_up - 0.25) <= share_bound(0.25, kDraws));
}

TEST_CASE("above bf16's largest finite value stochastic rounding gives that value or inf, in proportion") {
  // 0x7F7F8000 is halfway between bf16 max (0x7F7F) and inf (0x7F80): inf half of the time; fp32's max
  // (0x7F7FFFFF) is 65535/65536 of the way: inf nearly always. Negatives mirror it.
  const double bf16_max = from_bits(0x7F7F0000u), inf = std::numeric_limits<double>::infinity();
  const torch::Tensor half = rounded(torch::full({kDraws}, from_bits(0x7F7F8000u)), seeded(9));
  const double to_inf = share_equal(half, inf);
  CHECK(share_equal(half, bf16_max) + to_inf == 1.0);
  CHECK(std::abs(to_inf - 0.5) <= share_bound(0.5, kDraws));
  const torch::Tensor top = rounded(torch::full({kDraws}, -std::numeric_limits<float>::max()), seeded(10));
  const double to_minus_inf = share_equal(top, -inf);
  MESSAGE("halfway: share inf " << to_inf << "; -fp32 max: share -inf " << to_minus_inf);
  CHECK(share_equal(top, -bf16_max) + to_minus_inf == 1.0);
  CHECK(to_minus_inf >= 1.0 - 16.0 / kDraws);  // 1 - 2^-16 expected: a few bf16 max at most
  CHECK_FALSE(top.isnan().any().item<bool>());
}

TEST_CASE(
    "stochastic rounding and Kahan refuse wrong dtypes, shapes, devices and generators, writing nothing") {
  torch::Tensor dst = torch::zeros({4}, torch::kBFloat16);
  torch::Tensor f32 = torch::ones({4});
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(f32, f32),
                       "amp::stochastic_round_: dst must be bf16 (BFloat16), got Float",
                       amp::Bf16UpdateError);
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(dst, dst),
                       "amp::stochastic_round_: src must be fp32 (Float), got BFloat16",
                       amp::Bf16UpdateError);
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(dst, torch::ones({2, 2})),
                       "amp::stochastic_round_: dst and src differ in shape: [4] and [2, 2]",
                       amp::Bf16UpdateError);
  // A meta tensor stands for another device on a CPU-only machine.
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(dst, torch::ones({4}, torch::Device("meta"))),
                       "amp::stochastic_round_: dst is on cpu, src on meta: both must be on one device",
                       amp::Bf16UpdateError);
  torch::Tensor meta_dst =
      torch::empty({4}, torch::TensorOptions(torch::kBFloat16).device(torch::Device("meta")));
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(meta_dst, torch::ones({4}, torch::Device("meta")), seeded(1)),
                       "amp::stochastic_round_: gen is a generator of cpu, the tensors are on meta",
                       amp::Bf16UpdateError);
  torch::Tensor undefined;
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(undefined, f32),
                       "amp::stochastic_round_: dst is an undefined tensor", amp::Bf16UpdateError);
  CHECK_THROWS_WITH_AS(amp::stochastic_round_add_(dst, dst), doctest::Contains("update must be fp32"),
                       amp::Bf16UpdateError);
  CHECK_THROWS_WITH_AS(amp::stochastic_round_add_(dst, torch::ones({5})),
                       "amp::stochastic_round_add_: weight and update differ in shape: [4] and [5]",
                       amp::Bf16UpdateError);
  torch::Tensor comp32 = torch::zeros({4});
  CHECK_THROWS_WITH_AS(amp::kahan_add_(dst, comp32, f32),
                       "amp::kahan_add_: compensation must be bf16 (BFloat16), got Float",
                       amp::Bf16UpdateError);
  torch::Tensor comp3 = torch::zeros({3}, torch::kBFloat16);
  CHECK_THROWS_WITH_AS(amp::kahan_add_(dst, comp3, f32), doctest::Contains("differ in shape: [4] and [3]"),
                       amp::Bf16UpdateError);
  CHECK_THROWS_WITH_AS(amp::kahan_add_(dst, dst, f32),
                       "amp::kahan_add_: compensation shares its memory with weight", amp::Bf16UpdateError);
  CHECK(dst.eq(0).all().item<bool>());  // every refusal came before a write
}

TEST_CASE(
    "1000 updates of 1e-4 to a bf16 weight of 1: round to nearest stays at 1, stochastic and Kahan reach "
    "1.1") {
  // 4096 weights of 1, each updated 1000 times by 1e-4 (exact sum 1.1). Rounded to nearest, each update is
  // under half of bf16's gap at 1 (2^-7) and is lost. Stochastically, a weight rounds up with p = 1e-4 / 2^-7
  // = 0.0128 per step: 1 + 2^-7 * Binomial(1000, p), mean 1.1, standard deviation 2^-7 * sqrt(1000 p (1-p))
  // = 0.0278 per weight, 0.00043 for the mean of 4096; bound 5 of them plus 2e-4 for fp32's rounding of
  // 1 + 1e-4 (its ulp is 1.2e-7 on each 1e-4): 0.0024. Kahan is deterministic: within one bf16 gap of 1.1.
  constexpr int kSteps = 1000;
  constexpr int64_t kWeights = 4096;
  const torch::Tensor update = torch::full({kWeights}, 1e-4f);
  torch::Tensor nearest = torch::ones({kWeights}, torch::kBFloat16);
  torch::Tensor stochastic = nearest.clone(), kahan = nearest.clone();
  torch::Tensor compensation = torch::zeros_like(kahan);
  at::Generator gen = seeded(11);
  for (int step = 0; step < kSteps; ++step) {
    nearest.add_(update);  // computed in fp32, stored rounded to nearest
    amp::stochastic_round_add_(stochastic, update, gen);
    amp::kahan_add_(kahan, compensation, update);
  }
  const double sr_mean = stochastic.to(torch::kDouble).mean().item<double>();
  const double sr_min = stochastic.min().item<double>(), sr_max = stochastic.max().item<double>();
  const double k = kahan[0].item<double>(), c = compensation[0].item<double>();
  MESSAGE("round to nearest " << nearest[0].item<double>() << "; stochastic mean " << sr_mean << " (min "
                              << sr_min << ", max " << sr_max << "); Kahan " << k << " (compensation " << c
                              << ")");
  CHECK(nearest.eq(1.0).all().item<bool>());
  CHECK(std::abs(sr_mean - 1.1) <= 0.0024);
  CHECK(torch::equal(kahan, torch::full_like(kahan, k)));  // deterministic: every weight alike
  CHECK(std::abs(k - 1.1) <= kGapAt1);
  CHECK(k > 1.0 + 12 * kGapAt1);  // 1.09375: not stuck below, as round to nearest is
}

TEST_CASE("the bf16 updates read nothing back to the host") {
  // A host read (.item(), a nonzero) would show as aten::_local_scalar_dense or aten::nonzero; the counter
  // does see the ops (aten::randint).
  torch::Tensor w = torch::ones({256}, torch::kBFloat16), comp = torch::zeros_like(w);
  const torch::Tensor u = torch::full({256}, 1e-4f);
  OpCounter ops;
  amp::stochastic_round_(w, u, seeded(12));
  amp::stochastic_round_add_(w, u, seeded(13));
  amp::kahan_add_(w, comp, u);
  CHECK(ops.count("aten::_local_scalar_dense") == 0);
  CHECK(ops.count("aten::nonzero") == 0);
  CHECK(ops.count("aten::randint") == 2);
}

TEST_CASE(
    "stochastic rounding on CUDA gives bf16 neighbours, unbiased and reproducible with a CUDA generator") {
  if (!amp::cuda_available()) {
    std::cout << "SKIPPED: no CUDA device visible to this LibTorch\n";
    return;
  }
  const torch::Device cuda(torch::kCUDA, 0);
  const double x = 1.0 + std::ldexp(1.0, -10), p = 0.125;
  const torch::Tensor src = torch::full({kDraws}, static_cast<float>(x), cuda);
  const torch::Tensor a = rounded(src, seeded(14, cuda)), b = rounded(src, seeded(14, cuda));
  CHECK(torch::equal(a.view(torch::kShort), b.view(torch::kShort)));
  const double up = share_equal(a, 1.0 + kGapAt1);
  CHECK(share_equal(a, 1.0) + up == 1.0);
  CHECK(std::abs(up - p) <= share_bound(p, kDraws));
  torch::Tensor dst = a.clone();
  CHECK_THROWS_WITH_AS(amp::stochastic_round_(dst, src, seeded(1)),
                       doctest::Contains("gen is a generator of cpu, the tensors are on cuda:0"),
                       amp::Bf16UpdateError);
}

}  // namespace test_bf16_update
