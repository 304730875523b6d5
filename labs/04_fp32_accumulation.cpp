// Lab 04: why partial sums are accumulated in FP32.
//
// Backs quiz question 4 ("how are partial sums commonly accumulated?"). Tensor Core matmuls multiply
// 16-bit inputs but add the products into an fp32 accumulator. This lab computes the same dot products
// of fp16 inputs, of growing length K, three ways and compares each with a float64 reference computed
// from the original fp32 inputs:
//   (a) fp16 accumulation, emulated: a running sum rounded to fp16 after every single add (the worst case);
//   (a') blocked fp16 accumulation, as kernels with an fp16 accumulator do it: fp16 partial sums of a
//        block of 32 products, each then added to an fp16 running sum (K/32 roundings of the large sum);
//   (b) fp32 accumulation of the same fp16 inputs (result stored as fp16, as a fp16 matmul returns it);
//   (c) the library's fp16 matmul, at::matmul on fp16 tensors on the device.
// (a)'s error grows with K until the sum stalls: once half an fp16 step of the running sum exceeds a
// product, adding it changes nothing. A running fp16 sum of 0.01s stops at 32. (b) and (c) only carry
// the rounding of inputs and of the stored result. On CUDA the lab also switches cuBLAS to fp16
// accumulation (setAllowFP16AccumulationCuBLAS, LibTorch >= 2.7) for (c), and restores the setting.
//
// Run alone:  build/bin/lab04_fp32_accumulation [--device cpu|cuda] [--quick] [--flip]
// The inputs are fp16 whatever --dtype says (bf16 inputs would only add rounding; the point is the sum).
// --flip: (b) and the "fp32" sum of 0.01s accumulate in fp16 as well, so the checks that fp32
//         accumulation is far more accurate (than sequential and than blocked fp16) must FAIL.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

#include "lab/registry.h"

// cuBLAS fp16 accumulation switch: at::Context has it since PyTorch 2.7.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
#define AMP_LAB_HAS_FP16_ACCUMULATION_SWITCH 1
#else
#define AMP_LAB_HAS_FP16_ACCUMULATION_SWITCH 0
#endif

namespace {

constexpr int64_t kKMin = 256;           // shortest dot product; K doubles from here
constexpr int64_t kKMaxCpu = 65536;      // longest dot product on a CPU (default mode)
constexpr int64_t kKMaxCuda = 65536;     // the same on a GPU; the loop is launch-bound, not FLOP-bound
constexpr int64_t kKMaxQuick = 4096;     // quick mode (tests): about a second
constexpr int64_t kSide = 16;            // the matmul is [kSide, K] x [K, kSide]: 256 dot products
constexpr int64_t kSideQuick = 8;        // 64 dot products in quick mode
constexpr int64_t kBlock = 32;           // (a') products per fp16 partial sum (kKMin is a multiple of it)
constexpr double kStallTerm = 0.01;      // the term summed in the stall demo
constexpr int64_t kStallSteps = 10000;   // exact sum about 100; fp16 stalls at 32 after ~2600 adds (cheap: all modes)
constexpr int64_t kStallProbe = 100;     // read the fp16 sum every this many adds to see when it stops moving
// Check thresholds.
constexpr double kMatchFactor = 1.5;     // (c) within this factor of (b) at every K counts as "matches"
constexpr double kFarBelow = 5.0;        // (a) at least this many times the error of (b) and (c) at every K...
constexpr double kFarBelowLongest = 100.0;  // ...and this many times at the longest K
constexpr double kBlockedWorse = 3.0;    // (a') at least this many times (b)'s error at the longest K
constexpr double kGrowth = 5.0;          // (a)'s error at the longest K over that at K = 256
constexpr double kStallShare = 0.5;      // the fp16 sum of 0.01s ends below this share of the exact sum
constexpr double kFp32SumTol = 1e-3;     // the fp32 sum of 0.01s ends within this relative error

// Mean relative error of `x` against the float64 reference `ref` (both flat, same length).
double rel_err(const torch::Tensor& x, const torch::Tensor& ref) {
  return ((x.to(torch::kDouble) - ref).abs() / ref.abs()).mean().item<double>();
}

// "1.00x", "13.5x", "4463x": a ratio, rounded to what a reader can take in.
std::string times(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, x < 10 ? "%.2fx" : x < 100 ? "%.1fx" : "%.0fx", x);
  return buf;
}

struct Row {
  int64_t k;
  double fp16_acc, fp32_acc, matmul, cublas_fp16acc, fp16_share, blocked;
};

lab::Report run(const lab::Context& ctx) {
  lab::Report r("fp32-accumulation", "FP32 accumulation keeps long sums accurate; FP16 accumulation drifts and stalls");
  const int64_t k_max = ctx.size(kKMaxCpu, kKMaxCuda, kKMaxQuick);
  const int64_t side = ctx.quick ? kSideQuick : kSide;
  // --flip: the "fp32" accumulator is fp16, so the cause of (b)'s accuracy is removed.
  const torch::ScalarType acc_b = ctx.flip ? torch::kHalf : torch::kFloat;
  const auto opts = torch::TensorOptions().device(ctx.device);
  r.note("dtypes: inputs fp16 (rounded from fp32 uniform [0,1)); accumulators (a) fp16, (b) " + lab::short_name(acc_b) +
         "; (b), (c) results stored as fp16; reference fp64");
  if (ctx.flip) r.note("--flip: (b) and the fp32 sum of 0.01s accumulate in fp16, like (a)");

  // Inputs: fp32 values, rounded once to fp16. Products of two fp16 values have at most 22 significant
  // bits, so they are exact in fp32; each step of (a) then rounds only the running sum.
  const auto a = torch::rand({side, k_max}, opts), b = torch::rand({k_max, side}, opts);
  const auto a16 = a.to(torch::kHalf), b16 = b.to(torch::kHalf);
  const auto products = (a16.to(torch::kFloat).t().unsqueeze(/*dim=*/2) * b16.to(torch::kFloat).unsqueeze(/*dim=*/1))
                            .reshape({k_max, side * side});
  const auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);

  auto acc16 = torch::zeros({side * side}, opts.dtype(torch::kHalf));  // (a)
  auto acc32 = torch::zeros({side * side}, opts.dtype(acc_b));         // (b)
  auto block = torch::zeros({side * side}, opts.dtype(torch::kHalf));  // (a') the current block's partial sums
  auto blocked = torch::zeros({side * side}, opts.dtype(torch::kHalf));  // (a') the running sum of blocks
  std::vector<Row> rows;
  bool cublas_switch = false;
  for (int64_t k = 1, next = kKMin; k <= k_max; ++k) {
    const auto p = products[k - 1];
    acc16.add_(p);  // computed in fp32, rounded to fp16 on store: one rounding per add
    acc32.add_(p);
    block.add_(p);
    if (k % kBlock == 0) {  // a block is complete: add its partial sum to the fp16 running sum
      blocked.add_(block);
      block.zero_();
    }
    if (k != next) continue;
    next *= 2;
    const auto ref = torch::matmul(a64.slice(/*dim=*/1, 0, k), b64.slice(/*dim=*/0, 0, k)).reshape(-1);
    const auto a16k = a16.slice(/*dim=*/1, 0, k), b16k = b16.slice(/*dim=*/0, 0, k);
    Row row{k, rel_err(acc16, ref), rel_err(acc32.to(torch::kHalf), ref),
            rel_err(torch::matmul(a16k, b16k).reshape(-1), ref), NAN,
            (acc16.to(torch::kDouble) / ref).mean().item<double>(), rel_err(blocked, ref)};
#if AMP_LAB_HAS_FP16_ACCUMULATION_SWITCH
    if (ctx.cuda()) {  // cuBLAS may accumulate fp16 GEMMs in fp16 when allowed; restore the setting after
      auto& g = at::globalContext();
      const bool before = g.allowFP16AccumulationCuBLAS();
      g.setAllowFP16AccumulationCuBLAS(true);
      row.cublas_fp16acc = rel_err(torch::matmul(a16k, b16k).reshape(-1), ref);
      g.setAllowFP16AccumulationCuBLAS(before);
      cublas_switch = true;
    }
#endif
    rows.push_back(row);
  }

  r.section("Mean relative error of " + std::to_string(side * side) + " dot products vs float64, by length K");
  std::vector<std::string> cols{"K", "(a) fp16 acc", "(a') fp16 blocks", "(b) " + lab::short_name(acc_b) + " acc", "(c) matmul",
                                "(a)/(b)", "(a) sum/exact"};
  if (cublas_switch) cols.push_back("(c) cuBLAS fp16 acc");
  auto& table = r.table("", cols);
  for (const Row& row : rows) {
    std::vector<std::string> cells{std::to_string(row.k), lab::sci(row.fp16_acc, 2), lab::sci(row.blocked, 2),
                                   lab::sci(row.fp32_acc, 2),
                                   lab::sci(row.matmul, 2), times(row.fp16_acc / row.fp32_acc),
                                   lab::percent(row.fp16_share)};
    if (cublas_switch) cells.push_back(lab::sci(row.cublas_fp16acc, 2));
    table.row(cells);
  }
  if (ctx.cuda() && !cublas_switch) r.note("this LibTorch has no setAllowFP16AccumulationCuBLAS (needs >= 2.7)");
  const Row &first = rows.front(), &last = rows.back();
  double match = 1, far = INFINITY;  // worst ratios over K
  for (const Row& row : rows) {
    match = std::max(match, std::max(row.matmul / row.fp32_acc, row.fp32_acc / row.matmul));
    far = std::min(far, row.fp16_acc / std::max(row.fp32_acc, row.matmul));
  }
  // What this build's fp16 matmul does is measured, not assumed (CPU kernels and cuBLAS differ).
  r.note(std::string(ctx.cuda() ? "CUDA (cuBLAS defaults)" : "CPU") + ": (c) / (b) error, worst over K: " + times(match));
  if (match <= 1.05 && !ctx.flip)
    r.takeaway(std::string(ctx.cuda() ? "CUDA" : "CPU") + ": this build's fp16 matmul matches fp32 accumulation, so it accumulates in fp32");
  r.observe("k_max", "longest dot product K", static_cast<double>(k_max), "", std::to_string(k_max));
  r.observe("err_fp16_acc_kmin", "(a) fp16 accumulation error at K = 256", first.fp16_acc, "", lab::sci(first.fp16_acc));
  r.observe("err_fp16_acc_kmax", "(a) fp16 accumulation error at the longest K", last.fp16_acc, "", lab::sci(last.fp16_acc));
  r.observe("err_blocked_kmax", "(a') blocked fp16 acc error at the longest K", last.blocked, "",
            lab::sci(last.blocked));
  r.observe("err_fp32_acc_kmax", "(b) " + lab::short_name(acc_b) + " accumulation error at the longest K", last.fp32_acc, "", lab::sci(last.fp32_acc));
  r.observe("err_matmul_kmax", "(c) fp16 at::matmul error at the longest K", last.matmul, "", lab::sci(last.matmul));
  const double far_longest = last.fp16_acc / std::max(last.fp32_acc, last.matmul);
  r.observe("fp16_acc_penalty_kmax", "(a) / worse of (b), (c): at the longest K", far_longest, "x",
            times(far_longest));
  r.observe("fp16_sum_share_kmax", "(a) sum / exact sum at the longest K", 100 * last.fp16_share, "%");
  if (cublas_switch)
    r.observe("err_cublas_fp16acc_kmax", "(c) with cuBLAS fp16 accumulation, longest K", last.cublas_fp16acc, "",
              lab::sci(last.cublas_fp16acc));

  r.section("A running sum of 0.01s");
  const int64_t steps = kStallSteps;
  const auto term = torch::full({1}, kStallTerm, opts).to(torch::kHalf).to(torch::kFloat);  // 0.01 as fp16 holds it
  auto s16 = torch::zeros({1}, opts.dtype(torch::kHalf)), s32 = torch::zeros({1}, opts.dtype(acc_b));
  float probed = 0;
  int64_t last_change = 0;  // the last probe at which the fp16 sum still moved
  for (int64_t i = 1; i <= steps; ++i) {
    s16.add_(term);
    s32.add_(term);
    if (i % kStallProbe == 0) {  // probe now and then: item() waits for the device
      const float now = s16.item<float>();
      if (now != probed) last_change = i;
      probed = now;
    }
  }
  const double exact = static_cast<double>(steps) * term.item<double>();
  const double sum16 = s16.item<double>(), sum32 = s32.item<double>();
  r.observe("stall_sum_fp16", "fp16 sum after " + std::to_string(steps) + " adds (last moved by add " +
            std::to_string(last_change) + ")", sum16);
  r.observe("stall_sum_fp32", lab::short_name(acc_b) + " sum of the same terms (exact " + lab::num(exact, 7) + ")", sum32,
            "", lab::num(sum32, 7));

  const std::string b_name = "(b) " + lab::short_name(acc_b) + " acc";
  r.check("fp16 at::matmul's error matches fp32 accumulation's (within " + lab::num(kMatchFactor) +
              "x at every K): only inputs and result are rounded",
          match <= kMatchFactor, "worst ratio " + times(match) + "; at K = " + std::to_string(last.k) + ": " +
                                     lab::sci(last.matmul) + " vs " + b_name + " " + lab::sci(last.fp32_acc));
  r.check("both are far below fp16 accumulation's error (>= " + lab::num(kFarBelow) + "x at every K, >= " +
              lab::num(kFarBelowLongest) + "x at the longest)",
          far >= kFarBelow && far_longest >= kFarBelowLongest,
          "smallest ratio " + times(far) + ", at K = " + std::to_string(last.k) + ": " + times(far_longest));
  r.check("blocked fp16 accumulation (partial sums of " + std::to_string(kBlock) +
              ") beats sequential fp16 but stays >= " + lab::num(kBlockedWorse) + "x " + b_name +
              "'s error at the longest K",
          last.blocked < last.fp16_acc && last.blocked >= kBlockedWorse * last.fp32_acc,
          "at K = " + std::to_string(last.k) + ": (a) " + lab::sci(last.fp16_acc) + ", (a') " + lab::sci(last.blocked) +
              ", " + b_name + " " + lab::sci(last.fp32_acc) + " ((a')/(b) " + times(last.blocked / last.fp32_acc) + ")");
  r.check("fp16 accumulation's error grows with K (>= " + lab::num(kGrowth) + "x from K = 256 to " +
              std::to_string(last.k) + ")",
          last.fp16_acc >= kGrowth * first.fp16_acc,
          lab::sci(first.fp16_acc) + " -> " + lab::sci(last.fp16_acc) + " (" +
              times(last.fp16_acc / first.fp16_acc) + ")");
  r.check("a running fp16 sum of 0.01s stalls (< " + lab::percent(kStallShare, 0) +
              " of exact) while an fp32 sum stays within " + lab::percent(kFp32SumTol, 1),
          sum16 < kStallShare * exact && std::abs(sum32 - exact) <= kFp32SumTol * exact,
          "fp16 " + lab::num(sum16) + ", " + lab::short_name(acc_b) + " accumulator " + lab::num(sum32, 7) + ", exact " +
              lab::num(exact, 7));
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
