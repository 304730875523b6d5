// Lab 20: what the FP8 GEMM's accumulator keeps (quiz question 20). The AMP code is in amp.cpp.
//
// An FP8 tensor core multiplies E4M3 inputs exactly and adds the products in an accumulator narrower than
// FP32. The lab's model of it (TensorCore::chain below), after Fasi, Higham, Mikaitis and Pranesh,
// "Numerical behavior of NVIDIA tensor cores" (PeerJ Computer Science, 2021: products aligned to the largest
// exponent of a block and truncated, not rounded), with the parameters the mmaemu package (PyPI, 0.1.0)
// gives an H100's FP8 GEMMs (its `hopper` preset, from Khattak and Mikaitis, "Accurate models of NVIDIA
// tensor cores", arXiv 2512.07004):
//   - 32 products at a time, each exact; with the accumulator c they are aligned to the largest exponent E
//     among them (an input's exponent counted from E4M3's smallest normal, 2^-6, for subnormals) and each
//     is truncated toward zero to a multiple of 2^(E - 13);
//   - the terms are added exactly, and the sum truncated to 13 bits below its own leading bit: the
//     accumulator keeps 14 significant bits;
//   - a zero result is +0.
// The DeepSeek-V3 report (arXiv 2412.19437, section 3.3) states that the FP8 GEMMs of its GPUs keep "around
// 14 bits", gives a maximum relative error of nearly 2% at K = 4096 in its test (inputs not stated), and
// promotes the partial sums to FP32 every 128 elements: their figures, not this lab's.
// The lab multiplies E4M3 matrices [16 x K] x [K x 16] (inputs drawn uniform in [0, 1), one FP32 scale per
// tensor, amax / 448), K = 512 to 16384, three ways:
//   (1) one chain over K in the 14-bit accumulator (what an H100 does with fast accumulation, unsplit),
//   (2) the same chain in an FP32 accumulator that rounds to nearest,
//   (3) amp.cpp's promoted_gemm: chains of 128 from zero, each added to an FP32 total (DeepSeek-V3's fix,
//       and an H100's cuBLAS without fast accumulation, unsplit);
// then applies the scales as torch._scaled_mm does (alpha = scale_a x scale_b in FP32, one rounding of
// alpha x accumulator), and measures each output against the float64 product of the same FP8 values. It
// also runs zero-mean (Gaussian) inputs at K = 4096.
// Where the lab and mmaemu (the H100, bit for bit) differ: with these Ks and shapes like 64 x 64 the H100's
// cuBLAS splits K (3 ways at K = 8192, 6 at 16384, by mmaemu's table) and each split is a chain of its own,
// so with fast accumulation its error there is smaller than (1)'s single chain; the lab models the unsplit
// chain only. Where both are unsplit they agree bit for bit (tests/lab20_fp8_accumulator_test.cpp).
//
// Run:  build/bin/lab20_fp8_accumulator [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the inputs are E4M3)
// --flip: every accumulator is FP32 (rounding to nearest): (1) keeps the products' low bits, its error
//         stays near FP32's and lies on both sides of float64, and promotion gains nothing: checks
//         chain-error-grows, chain-truncates-below and promotion-beats-chain fail.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace lab20 {

namespace {

constexpr int64_t kBlockProducts = 32;     // products per step of the tensor core (mmaemu's hopper: nfma 32)
constexpr int kFractionBits = 13;          // bits kept below the leading one: 14 significant bits
constexpr double kE4m3MinExponent = -6;    // E4M3's smallest normal, 2^-6: subnormal inputs align as if there
constexpr double kMinAlignment = -132;     // the alignment exponent's floor (mmaemu's min_exp)
constexpr double kFp32MinExponent = -126;  // the result's exponent floor: FP32's smallest normal
constexpr double kNoExponent = -1e5;       // the exponent of a zero: below every other
constexpr int64_t kSegmentElements = int64_t{1} << 21;  // products formed at once (16 MB of float64)

// floor(log2|x|) of float64 x, exactly (frexp), where x != 0; kNoExponent where x == 0.
torch::Tensor exponent_of(const torch::Tensor& x) {
  auto [mantissa, exponent] = torch::frexp(x);
  return torch::where(x.ne(0), (exponent - 1).to(torch::kDouble), torch::full_like(x, kNoExponent));
}

// 2^e of integer-valued float64 e (within float64's normal range), from the bit pattern: exact.
torch::Tensor pow2(const torch::Tensor& e) {
  return (e.to(torch::kLong) + 1023).bitwise_left_shift(52).view(torch::kDouble);
}

// One step of the 14-bit accumulator: prod [..., 32] exact products (float64), lead [...] their largest
// exponent (counted from the inputs' exponents), c [...] the accumulator (float64 holding FP32 values).
torch::Tensor limited_step(const torch::Tensor& prod, const torch::Tensor& lead, const torch::Tensor& c) {
  const torch::Tensor e = torch::maximum(lead, exponent_of(c)).clamp_min(kMinAlignment);
  const torch::Tensor unit = pow2(e - kFractionBits);  // the last bit kept at this alignment
  // Each term truncated toward zero to a multiple of the unit, then added exactly (integers below 2^53).
  const torch::Tensor sum =
      (torch::trunc(prod / unit.unsqueeze(-1)).sum(/*dim=*/-1) + torch::trunc(c / unit)) * unit;
  // Normalized: 13 bits below the sum's own leading bit, truncated; a zero is +0.
  const torch::Tensor ulp =
      pow2(torch::maximum(exponent_of(sum), torch::full_like(sum, kFp32MinExponent)) - kFractionBits);
  const torch::Tensor kept = torch::trunc(sum / ulp) * ulp;
  return torch::where(kept.eq(0), torch::zeros_like(kept), kept);
}

// The chains of a [B, M, L] with b [B, N, L] (float64 FP8 values, L a multiple of 32): [B, M, N] float64
// holding FP32 values. Vectorized over B, M and N; sequential over the L / 32 steps, as the hardware is.
torch::Tensor chain_values(const torch::Tensor& a, const torch::Tensor& b, bool fp32) {
  const int64_t batch = a.size(0), m = a.size(1), n = b.size(1), steps = a.size(2) / kBlockProducts;
  const torch::Tensor ea = exponent_of(a).clamp_min(kE4m3MinExponent);
  const torch::Tensor eb = exponent_of(b).clamp_min(kE4m3MinExponent);
  torch::Tensor c = torch::zeros({batch, m, n}, a.options());
  const int64_t per_segment = std::max<int64_t>(1, kSegmentElements / (batch * m * n * kBlockProducts));
  for (int64_t s0 = 0; s0 < steps; s0 += per_segment) {
    const int64_t count = std::min(per_segment, steps - s0);
    const int64_t k0 = s0 * kBlockProducts, k1 = k0 + count * kBlockProducts;
    auto rows = [&](const torch::Tensor& t, int64_t rows_at) {  // [B, M, 1, count, 32] or [B, 1, N, ...]
      const torch::Tensor s = t.slice(/*dim=*/2, k0, k1).reshape({batch, t.size(1), count, kBlockProducts});
      return s.unsqueeze(rows_at);
    };
    const torch::Tensor prod = rows(a, 2) * rows(b, 1);  // [B, M, N, count, 32], exact
    if (fp32) {
      // Each step's products summed exactly (float64: fewer than 53 bits apart), added to c with one
      // rounding to FP32.
      const torch::Tensor sums = prod.sum(/*dim=*/-1);
      for (int64_t j = 0; j < count; ++j)
        c = (c + sums.select(/*dim=*/-1, j)).to(torch::kFloat).to(torch::kDouble);
      continue;
    }
    const torch::Tensor lead =
        torch::where(prod.ne(0), rows(ea, 2) + rows(eb, 1), torch::full_like(prod, kNoExponent)).amax(-1);
    for (int64_t j = 0; j < count; ++j)
      c = limited_step(prod.select(/*dim=*/-2, j), lead.select(/*dim=*/-1, j), c);
  }
  return c;
}

// a [B, M, K], b [B, N, K] E4M3 as float64, K zero-padded to a multiple of 32 (zeros change nothing).
torch::Tensor padded_values(const torch::Tensor& x) {
  const int64_t pad = (kBlockProducts - x.size(-1) % kBlockProducts) % kBlockProducts;
  const torch::Tensor v = x.to(torch::kDouble);
  return pad == 0 ? v : torch::constant_pad_nd(v, {0, pad});
}

}  // namespace

torch::Tensor TensorCore::chain(const torch::Tensor& a, const torch::Tensor& b) const {
  if (a.scalar_type() != torch::kFloat8_e4m3fn || b.scalar_type() != torch::kFloat8_e4m3fn)
    throw std::invalid_argument("TensorCore::chain takes E4M3 (kFloat8_e4m3fn) inputs");
  if (a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(1))
    throw std::invalid_argument("TensorCore::chain takes a [M, K] and b [N, K]");
  return chain_values(padded_values(a).unsqueeze(0), padded_values(b).unsqueeze(0), fp32_accumulator)
      .squeeze(0)
      .to(torch::kFloat);
}

}  // namespace lab20

namespace {

using namespace lab20;

constexpr int64_t kRows = 16, kCols = 16;  // the GEMM's output: 256 dot products of length K
const std::vector<int64_t> kLengths = {512, 1024, 2048, 4096, 8192, 16384};  // K
const std::vector<int64_t> kLengthsQuick = {512, 1024, 2048, 4096};
constexpr int64_t kGaussianLength = 4096;  // the zero-mean run: DeepSeek-V3's K
constexpr double kE4m3Max = 448;           // E4M3's largest value: each tensor's amax is scaled to it
const std::vector<int64_t> kProbeIntervals = {32, 64, 128, 256};  // partial lengths the judge tells apart
constexpr double kChainErrorFloor = 1e-3;  // (1) at the longest K: at least 0.1% (measured 7-26%)
constexpr double kChainGrowth = 4;         // ... and at least 4x its error at K = 512 (measured 10-35x)
constexpr double kBelowShare = 0.99;       // (1)'s outputs at or below float64: truncation, one-sided
constexpr double kFp32Bound = 1e-5;        // (2) at every K: 512 FP32 adds stay within 3e-5 (measured 1e-6)
constexpr double kPromotedBound = 3e-3;    // (3) at every K (measured at most 1.0e-3: 128-long chains)
constexpr double kPromotionGain = 10;      // (3) at least 10x better than (1) at the longest K

// ---- measure -----------------------------------------------------------------------------------------

// One FP8 operand: E4M3 values and the FP32 scale that dequantizes them (amax / 448, as a per-tensor
// current scale).
struct Fp8 {
  torch::Tensor values;  // E4M3
  torch::Tensor scale;   // FP32 scalar
};

Fp8 quantize(const torch::Tensor& x) {
  const torch::Tensor scale = x.abs().max() / kE4m3Max;
  return {(x / scale).to(torch::kFloat8_e4m3fn), scale};
}

// The largest relative error of the scaled outputs, as torch._scaled_mm forms them (alpha = scale_a x
// scale_b rounded to FP32, then alpha x accumulator rounded once to FP32), against the float64 product of
// the same FP8 values. normwise: relative to the largest |output| (for zero-mean inputs, whose outputs
// may lie near zero).
struct Scored {
  double error = 0;        // largest relative error
  double below_share = 0;  // share of outputs below float64
};

Scored score(const torch::Tensor& acc, const Fp8& a, const Fp8& b, const torch::Tensor& reference64,
             bool normwise) {
  const torch::Tensor alpha = (a.scale * b.scale).to(torch::kFloat).to(torch::kDouble);
  const torch::Tensor y = (acc.to(torch::kDouble) * alpha).to(torch::kFloat).to(torch::kDouble);
  const torch::Tensor ref = reference64 * a.scale.to(torch::kDouble) * b.scale.to(torch::kDouble);
  const torch::Tensor diff = (y - ref).abs();
  const torch::Tensor rel = normwise ? diff / ref.abs().max() : diff / ref.abs();
  // A NaN or inf anywhere makes the error NaN or inf: every bound then fails.
  const double error = torch::isfinite(rel).all().item<bool>() ? rel.max().item<double>()
                                                               : std::numeric_limits<double>::infinity();
  return {error, y.lt(ref).to(torch::kDouble).mean().item<double>()};
}

// The lab's own promotion, as an H100's cuBLAS runs it without fast accumulation (mmaemu's model): chains
// of `interval` from +0, all at once (a batch), added in K order to an FP32 total from +0.
torch::Tensor reference_promoted(const TensorCore& tc, const torch::Tensor& a, const torch::Tensor& b,
                                 int64_t interval) {
  const int64_t k = a.size(1), chunks = k / interval;
  if (k % interval != 0) throw std::logic_error("the lab's K must be a multiple of the interval");
  auto batched = [&](const torch::Tensor& x) {  // [C, rows, interval]
    return x.to(torch::kDouble).view({x.size(0), chunks, interval}).transpose(0, 1).contiguous();
  };
  const torch::Tensor partials = chain_values(batched(a), batched(b), tc.fp32_accumulator).to(torch::kFloat);
  torch::Tensor total = torch::zeros({a.size(0), b.size(0)}, partials.options());
  for (int64_t c = 0; c < chunks; ++c) total = total + partials[c];
  return total;
}

// Bit for bit, elementwise (NaNs compared by their bits too).
torch::Tensor same_bits(const torch::Tensor& x, const torch::Tensor& y) {
  return x.contiguous().view(torch::kInt).eq(y.contiguous().view(torch::kInt));
}

struct Row {
  int64_t k = 0;
  Scored chain, fp32, promoted;  // (1), (2), (3)
  double largest_sum = 0;        // the largest float64 accumulator (before the scales)
};

// What amp.cpp's promoted_gemm gave against the lab's own promotion.
struct Judged {
  double equal_share = 0;      // share of its outputs, over every K, equal to the lab's bit for bit
  int64_t partial_length = 0;  // at the shortest K: the interval whose promotion it equals (128 first, then
                               // 32, 64, 256), the shortest K itself if it equals (1)'s one chain, else 0
  bool same_as_chain = false;  // at the longest K it equals (1)'s one chain bit for bit
  bool finite = true;          // every output finite, every K
  double rel_diff_kmin = 0;    // its largest relative difference from the lab's at the shortest K (1 if inf)
  double sum_ratio_kmin = 1;   // the sum of its outputs over the lab's, at the shortest K
};

struct Result {
  lab::Context ctx;
  std::vector<Row> rows;
  Judged judged;
  Scored gauss_chain, gauss_fp32, gauss_promoted;  // zero-mean inputs at kGaussianLength, normwise
};

// amp.cpp's result, held to the shape and type the lab reads.
torch::Tensor learner_promoted(const TensorCore& tc, const Fp8& a, const Fp8& b) {
  const torch::Tensor acc = promoted_gemm(tc, a.values, b.values);
  if (acc.sizes() != torch::IntArrayRef({a.values.size(0), b.values.size(0)}))
    throw std::runtime_error(
        fmt::format("promoted_gemm must return [{}, {}]", a.values.size(0), b.values.size(0)));
  return acc.to(torch::kFloat);
}

// At the shortest K: which promotion the learner's result is, and how far it is from the lab's.
void judge_shortest(const TensorCore& tc, const Fp8& a, const Fp8& b, const torch::Tensor& learner,
                    const torch::Tensor& chain, Judged& j) {
  for (const int64_t interval : {kPromotionInterval, int64_t{32}, int64_t{64}, int64_t{256}}) {
    if (same_bits(learner, reference_promoted(tc, a.values, b.values, interval)).all().item<bool>()) {
      j.partial_length = interval;
      break;
    }
  }
  if (j.partial_length == 0 && same_bits(learner, chain).all().item<bool>())
    j.partial_length = a.values.size(1);
  const torch::Tensor ref = reference_promoted(tc, a.values, b.values, kPromotionInterval).to(torch::kDouble);
  const torch::Tensor diff = ((learner.to(torch::kDouble) - ref).abs() / ref.abs()).nan_to_num(1, 1, 1);
  j.rel_diff_kmin = std::min(1.0, diff.max().item<double>());
  j.sum_ratio_kmin = (learner.to(torch::kDouble).sum() / ref.sum()).nan_to_num(0, 0, 0).item<double>();
}

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx};
  const TensorCore tc{.fp32_accumulator = ctx.flip}, fp32{.fp32_accumulator = true};
  const std::vector<int64_t>& lengths = ctx.quick ? kLengthsQuick : kLengths;
  const auto on = torch::device(ctx.device);  // every step is exact or one IEEE rounding: CPU and GPU agree
  int64_t equal = 0, outputs = 0;
  for (const int64_t k : lengths) {
    const Fp8 a = quantize(torch::rand({kRows, k}, on)), b = quantize(torch::rand({kCols, k}, on));
    const torch::Tensor ref = torch::matmul(a.values.to(torch::kDouble), b.values.to(torch::kDouble).t());
    const torch::Tensor chain = tc.chain(a.values, b.values);
    const torch::Tensor learner = learner_promoted(tc, a, b);
    Row row{.k = k, .largest_sum = ref.abs().max().item<double>()};
    row.chain = score(chain, a, b, ref, /*normwise=*/false);
    row.fp32 = score(fp32.chain(a.values, b.values), a, b, ref, /*normwise=*/false);
    row.promoted = score(learner, a, b, ref, /*normwise=*/false);
    m.rows.push_back(row);
    const torch::Tensor lab_promoted = reference_promoted(tc, a.values, b.values, kPromotionInterval);
    equal += same_bits(learner, lab_promoted).sum().item<int64_t>();
    outputs += learner.numel();
    m.judged.finite = m.judged.finite && torch::isfinite(learner).all().item<bool>();
    if (k == lengths.front()) judge_shortest(tc, a, b, learner, chain, m.judged);
    if (k == lengths.back()) m.judged.same_as_chain = same_bits(learner, chain).all().item<bool>();
  }
  m.judged.equal_share = static_cast<double>(equal) / static_cast<double>(outputs);
  const Fp8 a = quantize(torch::randn({kRows, kGaussianLength}, on));
  const Fp8 b = quantize(torch::randn({kCols, kGaussianLength}, on));
  const torch::Tensor ref = torch::matmul(a.values.to(torch::kDouble), b.values.to(torch::kDouble).t());
  m.gauss_chain = score(tc.chain(a.values, b.values), a, b, ref, /*normwise=*/true);
  m.gauss_fp32 = score(fp32.chain(a.values, b.values), a, b, ref, /*normwise=*/true);
  m.gauss_promoted = score(learner_promoted(tc, a, b), a, b, ref, /*normwise=*/true);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

const Row& row_at(const Result& m, int64_t k) {
  for (const Row& r : m.rows)
    if (r.k == k) return r;
  throw std::out_of_range(fmt::format("no row at K = {}", k));
}

double promoted_max(const Result& m) {
  double worst = 0;
  for (const Row& r : m.rows)
    worst = std::isnan(r.promoted.error) ? r.promoted.error : std::max(worst, r.promoted.error);
  return worst;
}

double chain_below(const Result& m) {
  double share = 1;
  for (const Row& r : m.rows) share = std::min(share, r.chain.below_share);
  return share;
}

std::string times(double v) {
  return std::isfinite(v) ? fmt::format("{:.3g}x", v) : "-";
}

// Before the question: the table, under neutral words.
void report_measured(const Result& m, lab::Report& r) {
  r.dtypes("E4M3", "E4M3 inputs, one FP32 scale per tensor; the accumulators as listed; float64 references");
  if (m.ctx.flip) r.note("FLIP: every accumulator is FP32, rounding to nearest");
  r.section(
      fmt::format("E4M3 GEMM [{} x K] x [K x {}], inputs uniform in [0, 1): largest relative error of "
                  "its {} outputs against float64",
                  kRows, kCols, kRows * kCols));
  // In the section, not above it: the walk may drop set-up notes to fit a screen, and the rows need these.
  r.note(
      "(1) one chain over K in the tensor core's accumulator, 32 products a step; (2) the same in an FP32 "
      "accumulator; (3) amp.cpp: chains of 128 in the tensor core, each added to an FP32 total");
  auto& t = r.table("", {"K", "(1)", "(2)", "(3)", "(1)/(3)"});
  for (const Row& row : m.rows)
    t.row({std::to_string(row.k), lab::sci(row.chain.error, 2), lab::sci(row.fp32.error, 2),
           lab::sci(row.promoted.error, 2), times(row.chain.error / row.promoted.error)});
  r.observe("chain_below_share", "(1): share of outputs below float64, fewest over K", chain_below(m), "",
            lab::percent(chain_below(m)));
}

// After the answer: the numbers the explanation cites.
void report_numbers(const Result& m, lab::Report& r) {
  const Row &first = m.rows.front(), &last = m.rows.back(), &mid = row_at(m, kGaussianLength);
  r.detail_section("The same, as numbers the explanation cites");
  r.observe("k_min", "shortest K", static_cast<double>(first.k), "", std::to_string(first.k));
  r.observe("k_max", "longest K", static_cast<double>(last.k), "", std::to_string(last.k));
  auto err = [&](const std::string& key, const std::string& label, double v) {
    r.observe(key, label, v, "", lab::sci(v));
  };
  err("err_chain_kmin", "(1) at the shortest K", first.chain.error);
  err("err_chain_k4096", "(1) at K = 4096", mid.chain.error);
  err("err_chain_kmax", "(1) at the longest K", last.chain.error);
  err("err_fp32_kmin", "(2) at the shortest K", first.fp32.error);
  err("err_fp32_kmax", "(2) at the longest K", last.fp32.error);
  err("err_promoted_kmin", "(3) at the shortest K", first.promoted.error);
  err("err_promoted_kmax", "(3) at the longest K", last.promoted.error);
  err("err_promoted_max", "(3), largest over K", promoted_max(m));
  const double growth = last.chain.error / first.chain.error;
  r.observe("chain_growth", "(1): longest K's error over the shortest's", growth, "x", times(growth));
  const double k_ratio = static_cast<double>(last.k) / static_cast<double>(first.k);
  r.observe("k_ratio", "longest K over the shortest", k_ratio, "x", times(k_ratio));
  r.observe("k_ratio_sqrt", "... its square root (a random walk's growth)", std::sqrt(k_ratio), "x",
            times(std::sqrt(k_ratio)));
  const double gain = last.chain.error / last.promoted.error;
  r.observe("promotion_gain", "(1) over (3) at the longest K", gain, "x", times(gain));
  r.observe("fp32_below_share", "(2): share of outputs below float64, longest K", last.fp32.below_share, "",
            lab::percent(last.fp32.below_share));
  r.observe("largest_sum", "largest accumulator value (before the scales)", last.largest_sum, "",
            lab::sci(last.largest_sum));
  r.detail_section(
      fmt::format("Zero-mean inputs (Gaussian), K = {}: largest error relative to the largest |output|",
                  kGaussianLength));
  err("gauss_chain", "(1) one chain, tensor core", m.gauss_chain.error);
  err("gauss_fp32", "(2) FP32 accumulator", m.gauss_fp32.error);
  err("gauss_promoted", "(3) partial sums of 128, FP32 total", m.gauss_promoted.error);
  r.detail_section("The model against published figures");
  r.note(
      "the accumulator modelled: 32 exact products a step, aligned with it to their largest exponent and "
      "truncated 13 bits below it; the sum truncated to 14 significant bits (Fasi et al. 2021's alignment "
      "and truncation; mmaemu's hopper parameters)");
  r.note(
      "DeepSeek-V3 (arXiv 2412.19437, 3.3) reports about 14 bits and a largest relative error of nearly 2% "
      "at K = 4096 on its GPUs (its inputs are not stated); this run: (1) " +
      lab::sci(mid.chain.error) + " on uniform inputs, " + lab::sci(m.gauss_chain.error) +
      " on Gaussian ones relative to the largest output");
  r.note(
      "an H100's cuBLAS splits K at K >= 8192 for shapes like 64 x 64 (mmaemu's table: 3 splits at 8192, 6 "
      "at 16384), each split a chain of its own: its fast-accumulation error there is below (1)'s single "
      "chain; unsplit, (1) and (3) are its bits (fast and default accumulation)");
}

void report_lab_checks(const Result& m, lab::Report& r) {
  const Row &first = m.rows.front(), &last = m.rows.back();
  // The lab's model: a 14-bit accumulator loses more of each product as the sum grows. Fails under --flip
  // (an FP32 accumulator: its error stays near FP32's unit at every K).
  r.check(
      "chain-error-grows",
      fmt::format("(1) one chain in the tensor core: error at least {} at the longest K and at least {:g}x "
                  "its error at K = {}",
                  lab::sci(kChainErrorFloor, 1), kChainGrowth, first.k),
      last.chain.error >= kChainErrorFloor && last.chain.error >= kChainGrowth * first.chain.error,
      fmt::format("{} at K = {}, {} at K = {} ({})", lab::sci(first.chain.error), first.k,
                  lab::sci(last.chain.error), last.k, times(last.chain.error / first.chain.error)));
  // Truncation toward zero: with positive products every output falls short of float64. Fails under --flip
  // (rounding to nearest lands on both sides).
  r.check("chain-truncates-below",
          fmt::format("(1) truncates: at least {} of its outputs lie below float64, at every K",
                      lab::percent(kBelowShare)),
          chain_below(m) >= kBelowShare, fmt::format("fewest over K: {}", lab::percent(chain_below(m))));
  // The reference accumulator: FP32's error stays near its unit (2^-24) whatever K.
  double fp32_max = 0;
  for (const Row& row : m.rows) fp32_max = std::max(fp32_max, row.fp32.error);
  r.check("fp32-stays-small",
          fmt::format("(2) FP32 accumulator: error at most {} at every K", lab::sci(kFp32Bound, 1)),
          fp32_max <= kFp32Bound, fmt::format("largest {}", lab::sci(fp32_max)));
}

// The checks of amp.cpp's promoted_gemm.
void report_promotion_checks(const Result& m, lab::Report& r) {
  const Row& last = m.rows.back();
  const Judged& j = m.judged;
  // Catches no promotion, partial sums too long, a 16-bit total (it overflows or rounds coarsely), a
  // missing partial sum.
  const double worst = promoted_max(m);
  r.check("promoted-error-bounded",
          fmt::format("(3) promoted: error at most {} at every K", lab::sci(kPromotedBound, 1)),
          worst <= kPromotedBound,
          fmt::format("largest {} (at the longest K {})", lab::sci(worst), lab::sci(last.promoted.error)),
          {{"error_max", std::isfinite(worst) ? worst : 1.0}, {"finite", j.finite}});
  // Catches any other order or precision: partial sums of another length, a total kept wider than FP32
  // (float64) or narrower (bf16, fp16), a partial sum missing or added twice.
  r.check("promoted-matches-reference",
          "(3) equals, bit for bit, the lab's own promotion: chains of 128 from zero, each added to an FP32 "
          "total in K order",
          j.equal_share == 1,
          fmt::format("{} of the outputs equal; at K = {}: {}, largest relative difference {}",
                      lab::percent(j.equal_share), m.rows.front().k,
                      j.partial_length == kPromotionInterval ? std::string("promotion every 128")
                      : j.partial_length == 0                ? std::string("no promotion the lab tried")
                      : j.partial_length == m.rows.front().k
                          ? std::string("one chain")
                          : fmt::format("promotion every {}", j.partial_length),
                      lab::sci(j.rel_diff_kmin)),
          {{"equal_share", j.equal_share},
           {"partial_length", j.partial_length},
           {"same_as_chain", j.same_as_chain},
           {"finite", j.finite},
           {"rel_diff_kmin", j.rel_diff_kmin},
           {"sum_ratio_kmin", j.sum_ratio_kmin}});
  // The point of promotion: a 128-long chain keeps its products. Fails under --flip (FP32 everywhere: no
  // gain) and without promotion.
  const double gain = last.chain.error / last.promoted.error;
  r.check("promotion-beats-chain",
          fmt::format("at the longest K, (3)'s error is at most 1/{:g} of (1)'s", kPromotionGain),
          gain >= kPromotionGain, fmt::format("(1) / (3) = {}", times(gain)));
}

void report(const Result& m, lab::Report& r) {
  report_measured(m, r);
  report_numbers(m, r);
  report_lab_checks(m, r);
  report_promotion_checks(m, r);
  r.takeaway(
      "an FP8 tensor core adds into an accumulator of about 14 bits that truncates: over a long K the sum "
      "cuts off the products' low bits. Promote partial sums of 128 to FP32 (DeepSeek-V3; cuBLAS without "
      "fast accumulation)");
}

}  // namespace

AMP_LAB(measure, report);
