// amp::nvfp4_quantize / amp::nvfp4_dequantize / amp::nvfp4_per_tensor_scale (src/amp/nvfp4.h): NVFP4. First
// against what this file computes itself (each element the nearest E2M1 value to x / scale in float64, the
// block scale within E4M3's rounding of amax / 6, the FP4 packing), its refusals and its host syncs; then
// against torchao 0.18.0's nvfp4_quantize and NVFP4Tensor.dequantize (tests/parity/torchao_nvfp4_trace.py):
// the same E4M3 scale bytes, element bytes, per-tensor scale and dequantized bits, with and without the
// per-tensor scale. Without a Python torchao those cases print "SKIPPED: <why>".
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <nlohmann/json.hpp>

#include "amp/nvfp4.h"
#include "lab/libtorch.h"
#include "support/host_reads.h"
#include "support/torchao_trace.h"

namespace test_nvfp4 {

namespace {

at::Generator seeded(uint64_t seed) {
  at::Generator g = at::globalContext().defaultGenerator(torch::kCPU).clone();
  g.set_current_seed(seed);
  return g;
}

torch::Tensor bits_of_scales(const amp::Nvfp4Tensor& q) {
  return q.scales.view(torch::kByte);
}

// E2M1's non-negative values: the codes 0-7.
const std::vector<double> kE2m1Grid{0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// x / scale per block, in float64: the value each element stands for before rounding.
torch::Tensor scaled_f64(const torch::Tensor& x, const amp::Nvfp4Tensor& q) {
  torch::Tensor scale = q.scales.to(torch::kDouble);
  if (q.per_tensor_scale.defined()) scale = scale * q.per_tensor_scale.to(torch::kDouble);
  return (x.to(torch::kDouble).view({x.size(0), -1, 16}) / scale.unsqueeze(-1)).view(x.sizes());
}

// The distance from v to the nearest E2M1 value, v's magnitude clamped at 6, in float64.
torch::Tensor distance_to_grid(const torch::Tensor& v) {
  const torch::Tensor mag = v.abs().clamp_max(6.0);
  torch::Tensor best = torch::full_like(mag, 1e300);
  for (const double g : kE2m1Grid) best = torch::minimum(best, (mag - g).abs());
  return best;
}

}  // namespace

TEST_CASE(
    "nvfp4_quantize rounds each element to the nearest E2M1 value of x / scale, scale E4M3 of amax / 6") {
  // Blocks of magnitudes 2^-2 .. 2^8 (amax / 6 inside E4M3's normal range, no clamp). Catches a scale that is
  // not amax / 6 rounded to E4M3 (off by more than E4M3's half spacing, 2^-4 relative), elements rounded
  // toward zero or truncated, and codes packed in the wrong nibble order (the dequantized values would
  // not be the nearest grid points).
  const at::Generator g = seeded(3);
  const torch::Tensor mags = torch::exp2(torch::randint(-2, 9, {64, 1}, g).to(torch::kFloat));
  const torch::Tensor x = torch::randn({64, 64}, g) * mags;
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x);
  CHECK((q.scales.scalar_type() == torch::kFloat8_e4m3fn));
  CHECK(q.scales.sizes() == torch::IntArrayRef({64, 4}));
  CHECK(q.elements.sizes() == torch::IntArrayRef({64, 32}));
  const torch::Tensor amax6 = x.to(torch::kDouble).view({64, 4, 16}).abs().amax(-1) / 6.0;
  const torch::Tensor rel = (q.scales.to(torch::kDouble) / amax6 - 1.0).abs();
  CHECK(rel.max().item<double>() <= 1.0 / 16);
  const torch::Tensor y = amp::nvfp4_dequantize(q).to(torch::kDouble);
  const torch::Tensor v = scaled_f64(x, q).clamp(-6.0, 6.0);  // saturating at 6
  const torch::Tensor e = scaled_f64(y, q);
  // |e - v| is the nearest grid point's distance, up to x * (1 / s)'s fp32 rounding.
  const torch::Tensor excess = (e - v).abs() - distance_to_grid(v);
  CHECK(excess.max().item<double>() <= 1e-5);
  // The relative error of a block's largest value stays within E2M1's half spacing at 6 (1/6) and the
  // scale's rounding.
  CHECK(((y - x.to(torch::kDouble)).abs().view({64, 4, 16}).amax(-1) / (6 * amax6)).max().item<double>() <=
        (1.0 / 6) * (1 + 1.0 / 16) + 1.0 / 16);
}

TEST_CASE("nvfp4_quantize packs two E2M1 codes a byte, the even-indexed element in the low nibble") {
  // amax 6 gives the scale 1, so the values are the codes' own: 0, 0.5, 1, 1.5, 2, 3, 4, 6 are codes 0-7,
  // their negatives 8-15.
  const std::vector<float> values{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  const torch::Tensor x = torch::tensor(values).view({1, 16});
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x);
  CHECK(q.scales.to(torch::kFloat).item<float>() == 1.0f);
  const std::vector<int> want{0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  for (int i = 0; i < 8; ++i) CHECK(q.elements[0][i].item<int>() == want[i]);
  CHECK(torch::equal(amp::nvfp4_dequantize(q), x));
}

TEST_CASE("nvfp4_quantize clamps a block scale to [2^-6, 448] and gives a block with a NaN the NaN scale") {
  torch::Tensor x = torch::zeros({4, 16});
  x[1].fill_(1e-4);  // amax / 6 far below E4M3's smallest normal: the scale 2^-6, elements 0
  x[2][0] = 1e5;     // amax / 6 above 448: the scale 448, the value saturates at 6 x 448
  x[3][5] = std::nanf("");
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x);
  const torch::Tensor s = q.scales.to(torch::kFloat);
  CHECK(s[0].item<float>() == 0.015625f);
  CHECK(s[1].item<float>() == 0.015625f);
  CHECK(s[2].item<float>() == 448.0f);
  CHECK(std::isnan(s[3].item<float>()));
  const torch::Tensor y = amp::nvfp4_dequantize(q);
  CHECK(torch::equal(y[0], torch::zeros({16})));
  CHECK(torch::equal(y[1], torch::zeros({16})));
  CHECK(y[2][0].item<float>() == 2688.0f);
  CHECK(torch::isnan(y[3]).all().item<bool>());
}

TEST_CASE(
    "nvfp4's per-tensor scale amax / 2688 keeps a tensor of tiny values that block scales alone flush") {
  // Values near 1e-4: amax / 6 is below E4M3's 2^-6, so block scales alone clamp at 2^-6 and every element
  // rounds to zero; the per-tensor scale moves the block scales into E4M3's range. Catches a per-tensor
  // scale not applied to the block scales, or applied on one side only (quantize or dequantize).
  const at::Generator g = seeded(7);
  const torch::Tensor x = torch::randn({8, 64}, g) * 1e-4;
  const torch::Tensor amax = x.abs().amax();
  const torch::Tensor gscale = amp::nvfp4_per_tensor_scale(amax);
  CHECK(gscale.item<float>() == amax.item<float>() / 2688.0f);
  const double norm = x.to(torch::kDouble).norm().item<double>();
  const auto rel_error = [&](const amp::Nvfp4Tensor& q) {
    return (amp::nvfp4_dequantize(q).to(torch::kDouble) - x.to(torch::kDouble)).norm().item<double>() / norm;
  };
  const double alone = rel_error(amp::nvfp4_quantize(x));
  const amp::Nvfp4Tensor two = amp::nvfp4_quantize(x, gscale);
  CHECK(two.per_tensor_scale.defined());
  const double with_scale = rel_error(two);
  MESSAGE("relative error of 1e-4 values: block scales alone " << alone << ", with the per-tensor scale "
                                                               << with_scale);
  CHECK(alone == doctest::Approx(1.0));
  CHECK(with_scale < 0.2);
  // Each element is still the nearest grid point to x / (g x s).
  const torch::Tensor v = scaled_f64(x, two).clamp(-6.0, 6.0);
  const torch::Tensor e = scaled_f64(amp::nvfp4_dequantize(two), two);
  CHECK(((e - v).abs() - distance_to_grid(v)).max().item<double>() <= 1e-5);
}

TEST_CASE("nvfp4_quantize with a rounding generator is unbiased: the mean of 4000 draws is x, in float64") {
  // Each element lands on one of its two E2M1 neighbours (times the block scale), and their mean over draws
  // converges on x. Catches rounding up with the wrong probability (1 - p), a draw shared by all elements,
  // and nearest rounding (biased for x / scale between grid points); the scales stay those of nearest.
  constexpr int kDraws = 4000;
  const at::Generator g = seeded(13);
  torch::Tensor x = torch::randn({4, 32}, g);
  x[0][0] = 6.0f;  // the block's largest value: its scale maps it to 6, which SR keeps
  const amp::Nvfp4Tensor nearest = amp::nvfp4_quantize(x);
  at::Generator rounding = seeded(14);
  torch::Tensor sum = torch::zeros({4, 32}, torch::kDouble);
  torch::Tensor sum_sq = torch::zeros({4, 32}, torch::kDouble);
  for (int i = 0; i < kDraws; ++i) {
    const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x, {}, rounding);
    if (i == 0) CHECK(torch::equal(bits_of_scales(q), bits_of_scales(nearest)));
    const torch::Tensor y = amp::nvfp4_dequantize(q).to(torch::kDouble);
    // On a neighbour: no grid point lies strictly between y / scale and x / scale.
    if (i < 20) {
      const torch::Tensor v = scaled_f64(x, q);
      const torch::Tensor e = scaled_f64(y.to(torch::kFloat), q);
      for (const double gp : kE2m1Grid) {
        const torch::Tensor between = (v.abs() - gp) * (e.abs() - gp);
        CHECK(between.min().item<double>() >= -1e-9);
      }
    }
    sum += y;
    sum_sq += y * y;
  }
  const torch::Tensor mean = sum / kDraws;
  const torch::Tensor sd = (sum_sq / kDraws - mean * mean).clamp_min(0).sqrt();
  // x / scale clamped at 6 (the documented saturation, where the scale rounded down), times the scale.
  const torch::Tensor scale = nearest.scales.to(torch::kDouble).unsqueeze(-1);
  const torch::Tensor target =
      (scaled_f64(x, nearest).clamp(-6.0, 6.0).view({4, 2, 16}) * scale).view({4, 32});
  // Within 5 standard errors (plus fp32 slop) of it everywhere.
  const torch::Tensor z = (mean - target).abs() - 5 * sd / std::sqrt(double(kDraws)) - 1e-6;
  CHECK(z.max().item<double>() <= 0.0);
  // And nearest rounding is biased there: its error is far from zero on average.
  const double mean_error = (mean - target).abs().mean().item<double>();
  const double nearest_error =
      (amp::nvfp4_dequantize(nearest).to(torch::kDouble) - target).abs().mean().item<double>();
  MESSAGE("mean |E[SR] - x| (x clamped at 6 x scale) " << mean_error << ", mean |nearest - x| "
                                                       << nearest_error);
  CHECK(mean_error < nearest_error / 5);
  CHECK_THROWS_AS(amp::nvfp4_quantize(x, {}, at::Generator()), amp::Nvfp4Error);
}

TEST_CASE("nvfp4_quantize and nvfp4_dequantize read nothing back to the host") {
  const torch::Tensor x = torch::randn({4, 64}, seeded(5));
  const test_support::HostReadCounter host_reads;
  amp::nvfp4_dequantize(amp::nvfp4_quantize(x));
  amp::nvfp4_dequantize(amp::nvfp4_quantize(x, amp::nvfp4_per_tensor_scale(x.abs().amax())));
  amp::nvfp4_quantize(x, {}, seeded(6));  // stochastic rounding
  const int reads = host_reads.count();
  (void)x.sum().item<float>();  // the counter sees a read
  CHECK(reads == 0);
  CHECK(host_reads.count() > 0);
}

TEST_CASE("nvfp4_quantize and nvfp4_dequantize refuse bad dtypes, shapes and per-tensor scales") {
  CHECK_THROWS_WITH_AS(amp::nvfp4_quantize(torch::ones({2, 40})),
                       "amp::nvfp4_quantize: the last dimension (40) must be a multiple of 16",
                       amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_quantize(torch::Tensor()), amp::Error);  // one clause catches it
  CHECK_THROWS_AS(amp::nvfp4_quantize(torch::ones({})), amp::Nvfp4Error);
  CHECK_THROWS_WITH_AS(amp::nvfp4_quantize(torch::ones({2, 16}, torch::kDouble)),
                       doctest::Contains("fp32, bf16 or fp16"), amp::Nvfp4Error);
  CHECK_THROWS_WITH_AS(amp::nvfp4_quantize(torch::ones({2, 16}), torch::ones({2})),
                       doctest::Contains("one fp32 element"), amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_quantize(torch::ones({2, 16}), torch::ones({}, torch::kDouble)),
                  amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_per_tensor_scale(torch::ones({}, torch::kInt)), amp::Nvfp4Error);
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(torch::ones({2, 32}));
  CHECK_THROWS_WITH_AS(amp::nvfp4_dequantize({q.scales, q.elements.slice(1, 0, 8)}),
                       doctest::Contains("do not match"), amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_dequantize({q.scales.to(torch::kFloat), q.elements}), amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_dequantize(q, torch::kDouble), amp::Nvfp4Error);
  CHECK_THROWS_AS(amp::nvfp4_dequantize({}), amp::Nvfp4Error);
}

// ---- torchao ----------------------------------------------------------------------------------------

namespace {

const std::optional<nlohmann::json>& torchao_trace() {
  static const std::optional<nlohmann::json> doc = test_support::run_torchao_trace("torchao_nvfp4_trace");
  return doc;
}

using test_support::from_bits;

// The bits of a tensor as integers of its width, for an exact comparison (NaN payloads included).
torch::Tensor bits_of(const torch::Tensor& t) {
  const int64_t size = t.element_size();
  const auto int_type = size == 4 ? torch::kInt : size == 2 ? torch::kShort : torch::kByte;
  return t.contiguous().view(int_type).to(torch::kLong).flatten();
}

torch::Tensor want(const nlohmann::json& bits) {
  return torch::tensor(bits.get<std::vector<int64_t>>(), torch::kLong);
}

}  // namespace

TEST_CASE(
    "nvfp4_quantize and nvfp4_dequantize give torchao's nvfp4_quantize and dequantize bytes bit for bit") {
  const auto& doc = torchao_trace();
  if (!doc) return;
  REQUIRE_MESSAGE(doc->contains("cases"), "tests/parity/torchao_nvfp4_trace.py failed");
  int cases = 0, equal = 0, two_level = 0, dequantized = 0;
  for (const auto& c : (*doc)["cases"]) {
    const bool per_tensor = c["per_tensor"].get<bool>();
    CAPTURE(c["name"].get<std::string>());
    CAPTURE(per_tensor);
    const auto dtype = c["dtype"] == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
    const torch::Tensor x = from_bits(c["x"], dtype, c["shape"].get<std::vector<int64_t>>());
    // torch.max as the trace takes it (its NaN has other bits than amax's).
    const torch::Tensor g = per_tensor ? amp::nvfp4_per_tensor_scale(x.abs().max()) : torch::Tensor();
    const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x, g);
    CHECK(q.elements.sizes().vec() == c["elements_shape"].get<std::vector<int64_t>>());
    bool same = torch::equal(bits_of(q.scales), want(c["scales"]));
    same = torch::equal(bits_of(q.elements), want(c["elements"])) && same;
    if (per_tensor) same = torch::equal(bits_of(g), want(c["per_tensor_scale"])) && same;
    if (c.contains("dequantized")) {
      same = torch::equal(bits_of(amp::nvfp4_dequantize(q)), want(c["dequantized"])) && same;
      ++dequantized;
    }
    CHECK(same);
    ++cases;
    equal += same;
    two_level += per_tensor;
  }
  MESSAGE("torchao " << (*doc)["torchao_version"].get<std::string>() << ": " << equal << " of " << cases
                     << " cases bitwise equal (scales, elements, per-tensor scale; dequantized in "
                     << dequantized << ")");
  // The trace's 10 inputs, each with block scales only and with the per-tensor scale.
  CHECK(cases == 20);
  CHECK(two_level == 10);
  CHECK(dequantized == 18);
}

}  // namespace test_nvfp4
