// Lab 04: how long sums of fp16 products are accumulated, and what the accumulator's format costs (quiz
// question 4). The AMP code is in amp.cpp.
//
// Tensor Core GEMMs commonly multiply 16-bit inputs and add the products into an FP32 accumulator. It is
// common, not universal: Tensor Cores also support FP16 accumulators (PyTorch: allow_fp16_accumulation,
// off by default), and cuBLAS may add split-K partial sums in FP16 (allow_fp16_reduced_precision_reduction,
// on by default). The lab computes 256 dot products (64 in --quick mode) of fp16 inputs, of length
// K = 256 ... 65536, four ways, each against float64 computed from the fp32 values before rounding:
//   (a)  a running sum rounded to fp16 after every add (fp16 accumulation at its worst);
//   (a') fp16 partial sums of 32 products, each added to an fp16 running sum (blocked fp16 accumulation);
//   (b)  the same running sum kept in fp32, the result stored as fp16;
//   (c)  at::matmul on fp16 tensors: this device's own kernel, which the report names (CPU: oneDNN's or
//        ATen's fp16 gemm; CUDA: cuBLAS, measured again with each of its two fp16 switches flipped).
// Then a running fp16 sum of 0.01s, which stops at 32: there half an fp16 step is larger than 0.01.
//
// Run:  build/bin/lab04_fp32_accumulation [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (the inputs are fp16 and the lab refuses --dtype: bf16 inputs would only add rounding)
// --flip: (b) and the "fp32" sum of 0.01s accumulate in fp16 too. Then matmul-matches-fp32-sum,
//         fp32-sum-far-more-accurate, blocked-fp16-in-between and fp16-sum-stalls fail;
//         fp16-error-grows (about (a) alone) still holds.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab/registry.h"

namespace {

using lab04::blocked_fp16_sums;
using lab04::CublasFp16Switches;
using lab04::kHasFp16AccumulationSwitch;
using lab04::running_sums;

constexpr int64_t kKMin = 256;         // shortest dot product; K doubles from here
constexpr int64_t kKMax = 65536;       // longest dot product (default mode, CPU and CUDA)
constexpr int64_t kKMaxQuick = 4096;   // longest in --quick mode
constexpr int64_t kSide = 16;          // [kSide, K] x [K, kSide]: 256 dot products
constexpr int64_t kSideQuick = 8;      // 64 dot products in --quick mode
constexpr int64_t kBlock = 32;         // (a') products per fp16 partial sum (kKMin is a multiple of it)
constexpr double kStallTerm = 0.01;    // the term of the running sum that stalls
constexpr int64_t kStallAdds = 10000;  // exact sum about 100; fp16 stops at 32 after about 2600 adds
constexpr int64_t kStallProbe = 100;   // read the fp16 sum every this many adds, to see when it stops
// Check thresholds.
constexpr double kMatchFactor = 1.5;  // (c) within this factor of (b) at every K: "matches"
constexpr double kFarBelow = 5.0;     // (a) at least this many times (b)'s and (c)'s error at every K...
constexpr double kFarBelowLongest = 100.0;  // ...and this many times at the longest K
constexpr double kBlockedWorse = 3.0;       // (a') at least this many times (b)'s error at the longest K
constexpr double kGrowth = 5.0;             // (a)'s error at the longest K over that at the shortest
constexpr double kStallShare = 0.5;         // the fp16 sum of 0.01s ends below this share of the exact sum
constexpr double kFp32SumTol = 1e-3;        // the fp32 sum of 0.01s ends within this relative error

// ---- measure: four ways to sum, at every K, against float64; then the running sum of 0.01s ---------------

struct Row {
  int64_t k = 0;
  double fp16 = 0, blocked = 0, fp32 = 0, matmul = 0;      // mean relative errors of (a), (a'), (b), (c)
  double sum_share = 0;                                    // (a)'s sum over the exact sum
  double cublas_fp32_reduce = NAN, cublas_fp16_acc = NAN;  // CUDA: (c) with one switch flipped each
};

struct Result {
  lab::Context ctx;
  int64_t side = 0;
  torch::ScalarType acc_b = torch::kFloat;  // (b)'s accumulator: fp16 under --flip
  lab::MatmulKernel kernel;
  std::vector<Row> rows;
  bool cublas_measured = false;
  std::string cublas_note;  // what the cuBLAS switches showed, or why they were not measured
  double stall_fp16 = 0, stall_b = 0, stall_exact = 0;
  int64_t stall_last_change = 0;  // the last probe at which the fp16 sum still moved
};

// Mean relative error of `x` against the float64 reference `ref` (both flat, same length).
double rel_err(const torch::Tensor& x, const torch::Tensor& ref) {
  return ((x.to(torch::kDouble) - ref).abs() / ref.abs()).mean().item<double>();
}

std::vector<Row> sum_four_ways(const lab::Context& ctx, int64_t side, int64_t k_max,
                               torch::ScalarType acc_b) {
  const auto opts = torch::TensorOptions().device(ctx.device);
  // fp32 uniform [0, 1), rounded once to fp16; the float64 reference is computed from the fp32 values, so
  // (b) and (c) carry the rounding of the inputs and of the result, and no more.
  const torch::Tensor a = torch::rand({side, k_max}, opts), b = torch::rand({k_max, side}, opts);
  const torch::Tensor a16 = a.to(torch::kHalf), b16 = b.to(torch::kHalf);
  const torch::Tensor a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  const torch::Tensor products = (a16.to(torch::kFloat).t().unsqueeze(2) * b16.to(torch::kFloat).unsqueeze(1))
                                     .reshape({k_max, side * side});
  std::vector<int64_t> at;
  for (int64_t k = kKMin; k <= k_max; k *= 2) at.push_back(k);
  const auto fp16 = running_sums(products, torch::kHalf, at), fp32 = running_sums(products, acc_b, at);
  const auto blocked = blocked_fp16_sums(products, kBlock, at);
  std::vector<Row> rows;
  for (size_t i = 0; i < at.size(); ++i) {
    const int64_t k = at[i];
    const torch::Tensor ak = a16.slice(1, 0, k), bk = b16.slice(0, 0, k);
    const torch::Tensor ref = torch::matmul(a64.slice(1, 0, k), b64.slice(0, 0, k)).reshape(-1);
    Row row{.k = k,
            .fp16 = rel_err(fp16[i], ref),
            .blocked = rel_err(blocked[i], ref),
            .fp32 = rel_err(fp32[i].to(torch::kHalf), ref),  // stored as fp16, as an fp16 matmul returns it
            .matmul = rel_err(torch::matmul(ak, bk).reshape(-1), ref),
            .sum_share = (fp16[i].to(torch::kDouble) / ref).mean().item<double>()};
    if (ctx.cuda()) {
      {
        const CublasFp16Switches fp32_reductions(/*reduced_precision_reduction=*/false, false);
        row.cublas_fp32_reduce = rel_err(torch::matmul(ak, bk).reshape(-1), ref);
      }
      if (kHasFp16AccumulationSwitch) {
        const CublasFp16Switches fp16_accumulator(/*reduced_precision_reduction=*/true, true);
        row.cublas_fp16_acc = rel_err(torch::matmul(ak, bk).reshape(-1), ref);
      }
    }
    rows.push_back(row);
  }
  return rows;
}

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx,
           .side = ctx.quick ? kSideQuick : kSide,
           .acc_b = ctx.flip ? torch::kHalf : torch::kFloat,
           .kernel = lab::matmul_kernel(ctx.device, torch::kHalf)};
  m.rows = sum_four_ways(ctx, m.side, ctx.quick ? kKMaxQuick : kKMax, m.acc_b);
  m.cublas_measured = ctx.cuda();
  if (!ctx.cuda())
    m.cublas_note = "not measured, since this run is on the CPU and the switches change CUDA GEMMs only";
  else if (!kHasFp16AccumulationSwitch)
    m.cublas_note =
        "fp16 accumulator not measured: this LibTorch has no setAllowFP16AccumulationCuBLAS (2.7+)";

  const auto opts = torch::TensorOptions().device(ctx.device);
  const torch::Tensor term = torch::full({1}, kStallTerm, opts).to(torch::kHalf).to(torch::kFloat);
  torch::Tensor s16 = torch::zeros({1}, opts.dtype(torch::kHalf)),
                sb = torch::zeros({1}, opts.dtype(m.acc_b));
  float probed = 0;
  for (int64_t i = 1; i <= kStallAdds; ++i) {
    s16.add_(term);
    sb.add_(term);
    if (i % kStallProbe != 0) continue;  // probe now and then: item() waits for the device
    const float now = s16.item<float>();
    if (now != probed) m.stall_last_change = i;
    probed = now;
  }
  m.stall_exact = static_cast<double>(kStallAdds) * term.item<double>();
  m.stall_fp16 = s16.item<double>();
  m.stall_b = sb.item<double>();
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

// "1.00x", "13.5x", "4463x": a ratio, rounded to what a reader can take in.
std::string times(double x) {
  if (x < 10) return fmt::format("{:.2f}x", x);
  return x < 100 ? fmt::format("{:.1f}x", x) : fmt::format("{:.0f}x", x);
}

// The (c) the checks judge: the device's kernel; on CUDA with its reductions kept in fp32, because cuBLAS
// may otherwise add split-K partial sums in fp16 (that case is reported, and judged by no check).
double checked_matmul(const Row& row, bool cuda) {
  return cuda ? row.cublas_fp32_reduce : row.matmul;
}

void report_cublas(const Result& m, lab::Report& r) {
  if (!m.cublas_measured) {
    r.observe("cublas_switches", "cuBLAS fp16 switches", NAN, "", m.cublas_note);
    return;
  }
  auto& t = r.table("(c) under cuBLAS's fp16 switches, mean relative error against float64",
                    {"K", "PyTorch defaults", "split-K sums in fp32", "fp16 accumulator"});
  for (const Row& row : m.rows)
    t.row({std::to_string(row.k), lab::sci(row.matmul, 2), lab::sci(row.cublas_fp32_reduce, 2),
           std::isnan(row.cublas_fp16_acc) ? "-" : lab::sci(row.cublas_fp16_acc, 2)});
  const Row& last = m.rows.back();
  std::string text = fmt::format(
      "at K = {}: {} with PyTorch's defaults (allow_fp16_reduced_precision_reduction on), {} with it off",
      last.k, lab::sci(last.matmul), lab::sci(last.cublas_fp32_reduce));
  if (!std::isnan(last.cublas_fp16_acc))
    text += fmt::format(", {} with allow_fp16_accumulation on", lab::sci(last.cublas_fp16_acc));
  else
    text += "; " + m.cublas_note;
  r.observe("cublas_switches", "cuBLAS fp16 switches", last.matmul / last.cublas_fp32_reduce, "", text);
}

// The worst ratios over K: (c) against (b) either way, and (a) over the worse of (b) and (c).
struct Worst {
  double match = 1, far = INFINITY, far_longest = 0;
};
Worst worst_over_k(const Result& m) {
  Worst w;
  for (const Row& row : m.rows) {
    const double c = checked_matmul(row, m.ctx.cuda());
    w.match = std::max({w.match, c / row.fp32, row.fp32 / c});
    w.far = std::min(w.far, row.fp16 / std::max(row.fp32, c));
    w.far_longest = row.fp16 / std::max(row.fp32, c);
  }
  return w;
}

// Before the question: the table and the stalled sum, under neutral words.
void report_measured(const Result& m, lab::Report& r) {
  const std::string b = lab::short_name(m.acc_b);
  r.dtypes("fp16", "inputs fp16 (rounded from fp32 uniform [0,1)); results stored as fp16");
  if (m.ctx.flip) r.note("FLIP: (b) and the fp32 sum of 0.01s accumulate in fp16, like (a)");
  r.note(fmt::format("(a) fp16 running sum, (a') fp16 blocks of {}, (b) {} running sum", kBlock, b));
  r.note("(c) at::matmul: " + m.kernel.text);
  r.section(
      fmt::format("Mean relative error of {} dot products against float64, by length K", m.side * m.side));
  auto& t = r.table("", {"K", "(a)", "(a')", "(b)", "(c)", "(a)/(b)", "(a) sum/exact"});
  for (const Row& row : m.rows)
    t.row({std::to_string(row.k), lab::sci(row.fp16, 2), lab::sci(row.blocked, 2), lab::sci(row.fp32, 2),
           lab::sci(row.matmul, 2), times(row.fp16 / row.fp32), lab::percent(row.sum_share)});
  if (m.ctx.cuda()) r.note("(c) with PyTorch's defaults; with cuBLAS's switches flipped: after the answer");
  r.section(fmt::format("A running sum of 0.01s, {} adds", kStallAdds));
  r.observe("stall_sum_fp16", fmt::format("fp16 sum (last moved by add {})", m.stall_last_change),
            m.stall_fp16);
  r.observe("stall_sum_fp32", fmt::format("{} sum (exact {})", b, lab::num(m.stall_exact, 7)), m.stall_b, "",
            lab::num(m.stall_b, 7));
}

// After the answer: the numbers the explanation cites.
void report_numbers(const Result& m, const Worst& w, lab::Report& r) {
  const std::string b = lab::short_name(m.acc_b);
  const Row &first = m.rows.front(), &last = m.rows.back();
  r.detail_section("The same, as numbers the explanation cites");
  r.observe("k_min", "shortest dot product K", static_cast<double>(first.k), "", std::to_string(first.k));
  r.observe("k_max", "longest dot product K", static_cast<double>(last.k), "", std::to_string(last.k));
  r.observe("block_size", "(a') products per fp16 partial sum", kBlock, "", std::to_string(kBlock));
  r.observe("stall_terms", "the running sum's terms", kStallAdds, "", fmt::format("{} x 0.01", kStallAdds));
  r.observe("err_fp16_acc_kmin", "(a) fp16 running sum, error at the shortest K", first.fp16, "",
            lab::sci(first.fp16));
  r.observe("err_fp16_acc_kmax", "(a) fp16 running sum, error at the longest K", last.fp16, "",
            lab::sci(last.fp16));
  r.observe("err_blocked_kmax", "(a') fp16 blocks, error at the longest K", last.blocked, "",
            lab::sci(last.blocked));
  r.observe("err_fp32_acc_kmax", "(b) " + b + " running sum, error at the longest K", last.fp32, "",
            lab::sci(last.fp32));
  r.observe("err_matmul_kmax", "(c) at::matmul, error at the longest K", last.matmul, "",
            lab::sci(last.matmul));
  r.observe("fp16_acc_penalty_kmax", "(a) over the worse of (b) and (c), longest K", w.far_longest, "x",
            times(w.far_longest));
  r.observe("fp16_sum_share_kmax", "(a) sum over the exact sum, longest K", 100 * last.sum_share, "%");
  r.observe("matmul_kernel", "(c) ran", static_cast<double>(m.kernel.kind), "", m.kernel.text);
  r.observe("matmul_vs_fp32_acc",
            std::string("(c)") + (m.ctx.cuda() ? " with split-K sums in fp32" : "") +
                " over (b), error, worst over K",
            w.match, "x", times(w.match));
  r.detail_section("cuBLAS's fp16 switches");
  report_cublas(m, r);
}

void report_checks(const Result& m, const Worst& w, lab::Report& r) {
  const bool cuda = m.ctx.cuda();
  const std::string b = lab::short_name(m.acc_b);
  const Row &first = m.rows.front(), &last = m.rows.back();
  const std::string c_name =
      cuda ? "cuBLAS's fp16 GEMM with split-K sums in fp32" : "the CPU's fp16 at::matmul";
  if (!m.ctx.flip)
    r.takeaway(w.match <= 1.05
                   ? fmt::format("{} ({}) erred as the fp32 running sum did (worst ratio over K {}): it "
                                 "adds in fp32 and rounds only the result",
                                 c_name, m.kernel.text, times(w.match))
                   : fmt::format("{} ({}) erred up to {} the fp32 running sum's error: more than "
                                 "fp32 accumulation's rounding",
                                 c_name, m.kernel.text, times(w.match)));
  r.check(
      "matmul-matches-fp32-sum",
      fmt::format("{}'s error matches the {} running sum's (within {}x at every K): it rounds only inputs "
                  "and result",
                  c_name, b, lab::num(kMatchFactor)),
      w.match <= kMatchFactor,
      fmt::format("worst ratio {}; at K = {}: {} against {}", times(w.match), last.k,
                  lab::sci(checked_matmul(last, cuda)), lab::sci(last.fp32)));
  r.check(
      "fp32-sum-far-more-accurate",
      fmt::format("(b) and (c) are far more accurate than the fp16 running sum (>= {}x at every K, >= {}x "
                  "at the longest)",
                  lab::num(kFarBelow), lab::num(kFarBelowLongest)),
      w.far >= kFarBelow && w.far_longest >= kFarBelowLongest,
      fmt::format("smallest ratio {}; at K = {}: {}", times(w.far), last.k, times(w.far_longest)));
  r.check("blocked-fp16-in-between",
          fmt::format("fp16 blocks of {} beat the fp16 running sum but stay >= {}x the {} sum's error at the "
                      "longest K",
                      kBlock, lab::num(kBlockedWorse), b),
          last.blocked < last.fp16 && last.blocked >= kBlockedWorse * last.fp32,
          fmt::format("at K = {}: (a) {}, (a') {}, (b) {} ((a')/(b) {})", last.k, lab::sci(last.fp16),
                      lab::sci(last.blocked), lab::sci(last.fp32), times(last.blocked / last.fp32)));
  r.check(
      "fp16-error-grows",
      fmt::format("the fp16 running sum's error grows with K (>= {}x from K = {} to {})", lab::num(kGrowth),
                  first.k, last.k),
      last.fp16 >= kGrowth * first.fp16,
      fmt::format("{} -> {} ({})", lab::sci(first.fp16), lab::sci(last.fp16), times(last.fp16 / first.fp16)));
  r.check("fp16-sum-stalls",
          fmt::format("a running fp16 sum of 0.01s stalls (< {} of exact) while the {} one stays within {}",
                      lab::percent(kStallShare, 0), b, lab::percent(kFp32SumTol, 1)),
          m.stall_fp16 < kStallShare * m.stall_exact &&
              std::abs(m.stall_b - m.stall_exact) <= kFp32SumTol * m.stall_exact,
          fmt::format("fp16 {}, {} {}, exact {}", lab::num(m.stall_fp16), b, lab::num(m.stall_b, 7),
                      lab::num(m.stall_exact, 7)));
}

void report(const Result& m, lab::Report& r) {
  const Worst w = worst_over_k(m);
  report_measured(m, r);
  report_numbers(m, w, r);
  report_checks(m, w, r);
}

}  // namespace

AMP_LAB(measure, report);
