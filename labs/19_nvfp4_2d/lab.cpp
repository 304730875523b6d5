// Lab 19: NVFP4, two scales and 2D blocks (quiz question 19). The AMP code is in amp.cpp.
//
// NVFP4 (Transformer Engine's NVFP4BlockScaling; arXiv 2509.25149) stores FP4 E2M1 values, one FP8 E4M3
// scale per 16 of them and one FP32 scale per tensor. Transformer Engine's recipe quantizes weights with one
// scale per 16x16 tile, rounds gradients stochastically and applies a random Hadamard transform of size 16
// to the inputs of the weight-gradient GEMM. The lab
//   1. quantizes a weight W [256 x 256] in 1x16 blocks along its rows (y = x W^T sums over them) and again
//      along its columns (dx = dy W sums over those: the backward pass needs W^T), and in 16x16 tiles both
//      ways (amp::nvfp4_quantize, amp::nvfp4_quantize_2d): the share of W's values the two quantizations
//      round differently, the difference it makes to dx, and W's SQNR under each;
//   2. quantizes Gaussian and heavy-tailed (Student-t, 3 degrees of freedom) tensors to NVFP4 with amp.cpp's
//      two-level scale, and to MXFP4 (E8M0 per 32, the OCP spec's scale): the SQNR of each; and checks
//      amp.cpp's scales on those, on a tensor whose blocks span 13 binades, and on zeros;
//   3. quantizes many small gradients (each block's largest value 50x theirs) to NVFP4 rounding to nearest
//      and stochastically (a seeded generator): the error of their sum against float64;
//   4. applies a random Hadamard transform (a sign-flipped 16x16 Walsh-Hadamard matrix / 4, orthonormal) to
//      blocks with one outlier and to Gaussian blocks: the blocks' amax-to-rms ratio, and the error of NVFP4
//      after the transform is undone, against NVFP4 of the blocks themselves.
// Every reference (tile and block amaxes, E2M1 rounding, the MXFP4 quantizer, sums, the transform's
// inverse) is float64 and written here.
//
// Run:  build/bin/lab19_nvfp4_2d [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the lab's formats are E2M1 with E4M3 and E8M0 scales)
// --flip: W^T quantized in 1x16 blocks beside W's 16x16 tiles, and the gradients rounded to nearest where
//         they were rounded stochastically: checks 2d-transpose-identical and sr-unbiased fail.
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "amp.h"
#include "amp/mx.h"
#include "amp/nvfp4.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

using namespace lab19;

constexpr int64_t kBlock = 16;               // NVFP4's block (and tile side)
constexpr int64_t kMxBlock = 32;             // MXFP4's block
constexpr double kE2m1Max = 6;               // FP4 E2M1's largest value
constexpr double kE4m3Max = 448;             // FP8 E4M3's largest value
constexpr double kE4m3MinNormal = 1.0 / 64;  // 2^-6
constexpr double kE4m3HalfStep = 1.0 / 16;   // E4M3's rounding, relative: half its spacing 2^-3
constexpr int64_t kWeight = 256;             // W is [256 x 256]
constexpr int64_t kBatch = 64;               // dy's rows
constexpr double kMismatch1d = 0.1;          // 1x16 rows and columns disagree on at least this share of W
constexpr int64_t kRows = 128;               // the Gaussian and heavy-tailed tensors: [128 x 512]
constexpr int64_t kRowsQuick = 64;           // ... in quick mode
constexpr int64_t kCols = 512;
constexpr double kStudentDof = 3;                   // heavy tails: Student-t, 3 degrees of freedom
constexpr int64_t kWideRows = 64, kWideCols = 256;  // the wide tensor: blocks of magnitudes 2^-11 .. 2^2
constexpr int64_t kWideLow = -11, kWideHigh = 2;
constexpr double kNvfp4GainDb = 1;        // NVFP4 beats MXFP4 by at least this
constexpr double kBlockErrorMax = 0.35;   // every block of the wide tensor keeps its rms error below this
constexpr double kScaleTolerance = 1e-6;  // the per-tensor scale: fp32's rounding of amax / 2688
constexpr int64_t kGradRows = 1024;       // the gradients: [1024 x 256]
constexpr int64_t kGradRowsQuick = 256;   // ... in quick mode
constexpr int64_t kGradCols = 256;
constexpr double kSmallGrad = 0.02;        // the small gradients' mean; each block's largest is 1
constexpr double kSmallSpread = 0.25;      // ... their spread, relative
constexpr double kSrSigmas = 5;            // stochastic rounding's sum within 5 standard deviations
constexpr double kRtnBias = 0.5;           // round-to-nearest's sum off by at least half
constexpr int64_t kRhtBlocks = 4096;       // blocks of 16 in the Hadamard comparison
constexpr int64_t kRhtBlocksQuick = 1024;  // ... in quick mode
constexpr int64_t kOutliers = 4;           // outliers per block: 4 of the 16 values, magnitudes 8 .. 32
constexpr double kOutlierLow = 8, kOutlierHigh = 32;  // (the others Gaussian, rms 1); a single outlier: 16
constexpr double kRhtRatioDrop = 0.85;  // the transform brings the mean amax / rms to at most 0.85x
constexpr double kRhtGainDb = 0.5;      // ... and NVFP4's SQNR on 4-outlier blocks at least 0.5 dB up

// ---- float64 ------------------------------------------------------------------------------------------

torch::Tensor f64(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU).to(torch::kDouble);
}

// E2M1's spacing at magnitude a: 0.5 below 2, 1 below 4, 2 above.
torch::Tensor e2m1_spacing(const torch::Tensor& a) {
  return torch::where(a < 2, torch::full_like(a, 0.5),
                      torch::where(a < 4, torch::ones_like(a), torch::full_like(a, 2)));
}

// y rounded to nearest even on E2M1's grid, saturating at +-6 (torch::round rounds half to even, and the
// even multiple of the spacing is E2M1's even mantissa).
torch::Tensor round_e2m1(const torch::Tensor& y) {
  const torch::Tensor a = y.abs();
  const torch::Tensor s = e2m1_spacing(a);
  return torch::sign(y) * (torch::round(a / s) * s).clamp_max(kE2m1Max);
}

// x [rows, n] quantized to NVFP4 with `scale` [rows, n / 16] (per-tensor x block) and dequantized.
torch::Tensor nvfp4_f64(const torch::Tensor& x, const torch::Tensor& scale) {
  const torch::Tensor s = scale.repeat_interleave(kBlock, /*dim=*/-1);
  return round_e2m1(x / s) * s;
}

// Whether each of `deq`'s values is the E2M1 value nearest to x / scale (times scale), up to fp32's rounding
// of x / scale (1e-5 of E2M1's unit): the library's elements against float64, given its scales.
bool nearest_values(const torch::Tensor& x, const torch::Tensor& deq, const torch::Tensor& scale) {
  const torch::Tensor s = scale.repeat_interleave(kBlock, /*dim=*/-1);
  const torch::Tensor v = (x / s).clamp(-kE2m1Max, kE2m1Max);
  const torch::Tensor excess = (deq / s - v).abs() - (round_e2m1(v) - v).abs();
  return excess.max().item<double>() <= 1e-5;
}

// MXFP4 in float64: E8M0 scale 2^(floor(log2(amax)) - 2) per block of 32 (the OCP spec's), E2M1 elements.
torch::Tensor mxfp4_f64(const torch::Tensor& x) {
  const torch::Tensor blocks = x.reshape({-1, kMxBlock});
  const torch::Tensor amax = blocks.abs().amax(/*dim=*/-1, /*keepdim=*/true);
  auto [mantissa, exponent] = torch::frexp(torch::where(amax.eq(0), torch::ones_like(amax), amax));
  const torch::Tensor scale = torch::exp2((exponent - 1 - 2).to(torch::kDouble));
  return (round_e2m1(blocks / scale) * scale).view(x.sizes());
}

double sqnr_db(const torch::Tensor& x, const torch::Tensor& q) {
  return 10 * std::log10(x.pow(2).sum().item<double>() / (x - q).pow(2).sum().item<double>());
}

// ---- 1. W and W^T ----------------------------------------------------------------------------------------

struct Transpose {
  double mismatch_1d = 0, mismatch_2d = 0;  // share of W's values rounded differently, rows vs columns
  double mismatch_2d_cols = 0;              // ... 16x16 tiles against 1x16 blocks along the columns
  double dgrad_1d = 0, dgrad_2d = 0;        // |dy (W_rows - W_cols)| / |dy W_rows|
  double sqnr_1d = 0, sqnr_2d = 0;          // W's SQNR, dB
  double largest_scale_1d = 0;              // W's largest 1x16 block scale (E4M3)
  bool library_2d = false;  // the 2D scales are the tiles' amax / 6 / g, the values the nearest E2M1
};

// Whether q (W in 2D) holds one scale per tile, within E4M3's rounding of the float64 tile amax / 6 / g,
// and the values nearest to W / (g s).
bool tiles_match_f64(const torch::Tensor& w, const amp::Nvfp4Tensor& q) {
  const torch::Tensor g = f64(q.per_tensor_scale);
  const int64_t t = kWeight / kBlock;
  const torch::Tensor want = w.view({t, kBlock, t, kBlock}).abs().amax(/*dim=*/{1, 3}) / kE2m1Max / g;
  const torch::Tensor s = f64(q.scales).view({t, kBlock, t});
  const bool one_per_tile = torch::equal(s, s.narrow(/*dim=*/1, 0, 1).expand_as(s));
  const bool nearest_scale = ((s.select(1, 0) / want - 1).abs() <= kE4m3HalfStep).all().item<bool>();
  return one_per_tile && nearest_scale && nearest_values(w, f64(amp::nvfp4_dequantize(q)), f64(q.scales) * g);
}

Transpose measure_transpose(const lab::Context& ctx) {
  const torch::Tensor w32 =
      torch::randn({kWeight, kWeight}, torch::device(ctx.device)) / std::sqrt(double(kWeight));
  const torch::Tensor dy = torch::randn({kBatch, kWeight}, torch::kDouble);
  const torch::Tensor w = f64(w32);
  const torch::Tensor g = amp::nvfp4_per_tensor_scale(w32.abs().amax());
  auto deq = [](const amp::Nvfp4Tensor& q) { return f64(amp::nvfp4_dequantize(q)); };
  const amp::Nvfp4Tensor rows_1d = amp::nvfp4_quantize(w32, g);
  const torch::Tensor r1 = deq(rows_1d), c1 = deq(amp::nvfp4_quantize(w32.t(), g)).t();
  const amp::Nvfp4Tensor rows_2d = amp::nvfp4_quantize_2d(w32, g);
  const torch::Tensor r2 = deq(rows_2d);
  // --flip: W^T in 1x16 blocks beside W's tiles.
  const torch::Tensor c2 = ctx.flip ? c1 : deq(amp::nvfp4_quantize_2d(w32.t(), g)).t();
  auto share = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.ne(b).to(torch::kDouble).mean().item<double>();
  };
  // dx = dy W: the backward pass's product with W^T's quantization, against the forward's W.
  auto dgrad = [&](const torch::Tensor& fwd, const torch::Tensor& bwd) {
    return (dy.mm(fwd - bwd)).norm().item<double>() / dy.mm(fwd).norm().item<double>();
  };
  Transpose t;
  t.mismatch_1d = share(r1, c1);
  t.mismatch_2d = share(r2, c2);
  t.mismatch_2d_cols = share(r2, c1);
  t.dgrad_1d = dgrad(r1, c1);
  t.dgrad_2d = dgrad(r2, c2);
  t.sqnr_1d = sqnr_db(w, r1);
  t.sqnr_2d = sqnr_db(w, r2);
  t.largest_scale_1d = f64(rows_1d.scales).max().item<double>();
  t.library_2d = tiles_match_f64(w, rows_2d);
  return t;
}

// ---- 2. NVFP4's two-level scale (amp.cpp) against MXFP4
// -----------------------------------------------------

struct ScaleRun {
  double per_tensor = 0, want = 0;  // amp.cpp's per-tensor scale, and amax / 2688 in float64
  torch::Tensor block;              // amp.cpp's block scales, float64 [rows, n / 16]
  torch::Tensor deq;                // x quantized with them (float64)
  torch::Tensor block_amax;         // float64 [rows, n / 16]
  torch::Tensor x;                  // the tensor, float64
};

ScaleRun run_scales(const torch::Tensor& x32) {
  const Nvfp4Scales s = nvfp4_scales(x32);
  const torch::Tensor x = f64(x32);
  if (!s.per_tensor.defined() || s.per_tensor.numel() != 1 || !s.block.defined() ||
      s.block.sizes() != torch::IntArrayRef({x.size(0), x.size(1) / kBlock}))
    throw std::runtime_error("nvfp4_scales must return one per-tensor scale and one scale per block of 16");
  ScaleRun r;
  r.per_tensor = f64(s.per_tensor).item<double>();
  r.want = x.abs().max().item<double>() / (kE4m3Max * kE2m1Max);
  r.block = f64(s.block);
  r.deq = nvfp4_f64(x, r.block * r.per_tensor);
  r.block_amax = x.view({x.size(0), -1, kBlock}).abs().amax(/*dim=*/-1);
  r.x = x;
  return r;
}

struct ScaleChecks {
  double ratio = 0;              // per-tensor scale / (amax / 2688), Gaussian tensor
  double times_want = 0;         // per-tensor scale x (amax / 2688), Gaussian tensor (1: the reciprocal)
  double worst_ratio_error = 0;  // |ratio - 1|, worst of the three tensors
  bool is_one = true;            // the per-tensor scale is 1 on every tensor
  double not_e4m3 = 0;           // share of block scales no E4M3 byte holds (or not finite and positive)
  double blocks_off = 0;    // share of blocks whose scale is off amax / 6 / g by more than E4M3's rounding
  double median_ratio = 0;  // median of block scale x g / (amax / 6), Gaussian tensor
  double worst_block_error = 0;                  // wide tensor: the largest block rms error / block rms
  bool zero_tensor = false, zero_block = false;  // zeros get finite positive scales and stay zeros
};

struct Formats {
  double nv_gauss = 0, mx_gauss = 0, nv_heavy = 0, mx_heavy = 0;  // SQNR, dB
  bool library_nv = false, library_mx = false;  // the library's NVFP4 and MXFP4 against float64
  ScaleChecks scale;
};

// The block scales' checks over one run: E4M3 values, and within E4M3's rounding of amax / 6 / g where that
// lies in E4M3's normal range. Returns {blocks not E4M3, blocks off, blocks counted}.
std::array<double, 3> block_counts(const ScaleRun& r) {
  const torch::Tensor s = r.block;
  const torch::Tensor e4m3 =
      s.to(torch::kFloat).to(torch::kFloat8_e4m3fn).to(torch::kDouble).eq(s) & torch::isfinite(s) & (s > 0);
  const torch::Tensor want = r.block_amax / kE2m1Max / r.per_tensor;
  // Left out: blocks whose amax / 6 / g is finite but outside E4M3's normals (clamped, or subnormal).
  const torch::Tensor outside = torch::isfinite(want) & ((want < kE4m3MinNormal) | (want > kE4m3Max));
  const torch::Tensor fits = (s / want - 1).abs() <= kE4m3HalfStep + 1e-9;  // a NaN does not fit
  return {double((~e4m3).sum().item<int64_t>()), double((~outside & ~fits).sum().item<int64_t>()),
          double(s.numel())};
}

// max that keeps a NaN (the checks' comparisons then fail).
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
}

// Whether amp.cpp's scales of x32 are finite and positive and x32's zeros dequantize to zeros (nothing NaN).
bool zeros_stay_zero(const torch::Tensor& x32) {
  const ScaleRun r = run_scales(x32);
  const bool positive = std::isfinite(r.per_tensor) && r.per_tensor > 0 &&
                        (torch::isfinite(r.block) & (r.block > 0)).all().item<bool>();
  return positive && torch::isfinite(r.deq).all().item<bool>() &&
         r.deq.masked_select(r.x.eq(0)).eq(0).all().item<bool>();
}

ScaleChecks check_scales(const ScaleRun& gauss, const ScaleRun& heavy, const ScaleRun& wide,
                         const lab::Context& ctx) {
  ScaleChecks c;
  c.ratio = gauss.per_tensor / gauss.want;
  c.times_want = gauss.per_tensor * gauss.want;
  double not_e4m3 = 0, off = 0, blocks = 0;
  for (const ScaleRun* r : {&gauss, &heavy, &wide}) {
    c.worst_ratio_error = nan_max(c.worst_ratio_error, std::abs(r->per_tensor / r->want - 1));
    c.is_one = c.is_one && r->per_tensor == 1;
    const auto [n, o, b] = block_counts(*r);
    not_e4m3 += n;
    off += o;
    blocks += b;
  }
  c.not_e4m3 = not_e4m3 / blocks;
  c.blocks_off = off / blocks;
  c.median_ratio = (gauss.block * gauss.per_tensor / (gauss.block_amax / kE2m1Max)).median().item<double>();
  // Each block of the wide tensor: its rms error / its rms (NaN kept by max).
  const torch::Tensor x = wide.x.view({wide.x.size(0), -1, kBlock});
  const torch::Tensor e = (wide.deq.view(x.sizes()) - x).pow(2).mean(-1) / x.pow(2).mean(-1);
  c.worst_block_error = e.sqrt().max().item<double>();
  // Zeros: a tensor of them (a dead layer's gradient), and a Gaussian tensor whose rows start with a block
  // of them.
  auto o = torch::device(ctx.device);
  c.zero_tensor = zeros_stay_zero(torch::zeros({kBlock, 4 * kBlock}, o));
  c.zero_block =
      zeros_stay_zero(torch::randn({kBlock, 4 * kBlock}, o)
                          .index_fill_(/*dim=*/1, torch::arange(kBlock, o.dtype(torch::kLong)), 0));
  return c;
}

// The library's NVFP4 (two levels) against float64: scales within E4M3's rounding of amax / 6 / g, values
// the nearest E2M1; and its MXFP4 (spec scale) equal to the lab's float64 MXFP4.
bool library_nvfp4_matches(const torch::Tensor& x32) {
  const torch::Tensor x = f64(x32);
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(x32, amp::nvfp4_per_tensor_scale(x32.abs().amax()));
  const torch::Tensor g = f64(q.per_tensor_scale), s = f64(q.scales);
  const torch::Tensor want =
      (x.view({x.size(0), -1, kBlock}).abs().amax(/*dim=*/-1) / kE2m1Max / g).clamp(kE4m3MinNormal, kE4m3Max);
  const bool scales = ((s / want - 1).abs() <= kE4m3HalfStep).all().item<bool>();
  return scales && nearest_values(x, f64(amp::nvfp4_dequantize(q)), s * g);
}

Formats measure_formats(const lab::Context& ctx) {
  const int64_t rows = ctx.size(kRows, kRows, kRowsQuick);
  auto o = torch::device(ctx.device);
  const torch::Tensor gauss = torch::randn({rows, kCols}, o);
  // Student-t: z / sqrt(chi2_dof / dof), chi2 a sum of dof squared normals.
  const torch::Tensor chi2 = torch::randn({rows, kCols, int64_t(kStudentDof)}, o).pow(2).sum(-1);
  const torch::Tensor heavy = torch::randn({rows, kCols}, o) / (chi2 / kStudentDof).sqrt();
  // Blocks of magnitudes 2^-11 .. 2^2: 13 binades, mostly below what E4M3's normals (2^-6 .. 448) reach
  // from 1.
  const torch::Tensor mags = torch::exp2(
      torch::randint(kWideLow, kWideHigh + 1, {kWideRows, kWideCols / kBlock, 1}, o).to(torch::kFloat));
  const torch::Tensor wide =
      (torch::randn({kWideRows, kWideCols / kBlock, kBlock}, o) * mags).view({kWideRows, kWideCols});
  const ScaleRun rg = run_scales(gauss), rh = run_scales(heavy), rw = run_scales(wide);
  Formats f;
  f.nv_gauss = sqnr_db(rg.x, rg.deq);
  f.nv_heavy = sqnr_db(rh.x, rh.deq);
  const torch::Tensor mx_gauss = mxfp4_f64(rg.x), mx_heavy = mxfp4_f64(rh.x);
  f.mx_gauss = sqnr_db(rg.x, mx_gauss);
  f.mx_heavy = sqnr_db(rh.x, mx_heavy);
  f.library_nv = library_nvfp4_matches(gauss) && library_nvfp4_matches(heavy) && library_nvfp4_matches(wide);
  auto mx_lib = [](const torch::Tensor& x) {
    return f64(amp::mx_fake_quantize(x, torch::kFloat4_e2m1fn_x2, kMxBlock, amp::MxScaleMode::Floor));
  };
  f.library_mx = torch::equal(mx_lib(gauss), mx_gauss) && torch::equal(mx_lib(heavy), mx_heavy);
  f.scale = check_scales(rg, rh, rw, ctx);
  return f;
}

// ---- 3. small gradients: stochastic rounding and round-to-nearest
// ---------------------------------------------

struct Gradients {
  double sr_error = 0, rtn_error = 0;  // of the small values' sum, relative to float64's
  double sigma = 0;                    // stochastic rounding's standard deviation (a bound), relative
};

Gradients measure_gradients(const lab::Context& ctx) {
  const int64_t rows = ctx.size(kGradRows, kGradRows, kGradRowsQuick);
  auto o = torch::device(ctx.device);
  // Small gradients of one sign, and in each block one value of 1 (50x them) that sets the block's scale.
  const torch::Tensor small32 = kSmallGrad * (1 + kSmallSpread * torch::randn({rows, kGradCols}, o));
  const torch::Tensor pos = torch::randint(0, kBlock, {rows, kGradCols / kBlock, 1}, o.dtype(torch::kLong));
  const torch::Tensor grad =
      small32.view({rows, -1, kBlock}).scatter(/*dim=*/-1, pos, 1.0).view({rows, kGradCols});
  const torch::Tensor x = f64(grad), small = x.ne(1);
  const torch::Tensor g = amp::nvfp4_per_tensor_scale(grad.abs().amax());
  at::Generator gen = at::globalContext().defaultGenerator(ctx.device).clone();
  gen.set_current_seed(ctx.seed);
  const amp::Nvfp4Tensor rtn = amp::nvfp4_quantize(grad, g);
  // --flip: round to nearest here too.
  const amp::Nvfp4Tensor sr = ctx.flip ? rtn : amp::nvfp4_quantize(grad, g, gen);
  const double sum = x.masked_select(small).sum().item<double>();
  auto error = [&](const amp::Nvfp4Tensor& q) {
    return (f64(amp::nvfp4_dequantize(q)).masked_select(small).sum().item<double>() - sum) / sum;
  };
  Gradients r;
  r.sr_error = error(sr);
  r.rtn_error = error(rtn);
  // Each value lands on one of its two E2M1 neighbours, spacing d apart: a variance of at most d^2 / 4.
  const torch::Tensor scale = (f64(rtn.scales) * f64(g)).repeat_interleave(kBlock, /*dim=*/-1);
  const torch::Tensor d = e2m1_spacing((x / scale).abs()) * scale;
  r.sigma = std::sqrt((d.pow(2) / 4).masked_select(small).sum().item<double>()) / sum;
  return r;
}

// ---- 4. a random Hadamard transform ----------------------------------------------------------------------

struct Hadamard {
  double ratio_before = 0, ratio_after = 0;    // blocks with 4 outliers: mean amax / rms
  double sqnr_before = 0, sqnr_after = 0;      // ... NVFP4's SQNR, dB (after: the transform undone)
  double single_ratio_after = 0;               // blocks with one outlier: mean amax / rms after
  double single_ratio_before = 0;              // ... and before
  double single_before = 0, single_after = 0;  // ... NVFP4's SQNR, dB
  double gauss_before = 0, gauss_after = 0;    // Gaussian blocks: NVFP4's SQNR, dB
};

// The 16x16 Walsh-Hadamard matrix (Sylvester's construction), its rows' signs flipped by `signs`, / 4:
// orthonormal, so its transpose undoes it.
torch::Tensor random_hadamard(const torch::Tensor& signs) {
  torch::Tensor h = torch::ones({1, 1}, torch::kDouble);
  while (h.size(0) < kBlock) h = torch::cat({torch::cat({h, h}, 1), torch::cat({h, -h}, 1)}, 0);
  return signs.unsqueeze(1) * h / std::sqrt(double(kBlock));
}

// NVFP4 (1x16, two levels) of blocks x32 [n, 16], transformed by t first when t is defined: the SQNR of the
// result (t undone in float64) against x in float64.
double nvfp4_sqnr(const torch::Tensor& x32, const torch::Tensor& t) {
  const torch::Tensor in = t.defined() ? x32.mm(t.to(torch::kFloat).to(x32.device())) : x32;
  const amp::Nvfp4Tensor q = amp::nvfp4_quantize(in, amp::nvfp4_per_tensor_scale(in.abs().amax()));
  const torch::Tensor deq = f64(amp::nvfp4_dequantize(q));
  return sqnr_db(f64(x32), t.defined() ? deq.mm(t.t()) : deq);
}

double amax_to_rms(const torch::Tensor& blocks) {
  return (blocks.abs().amax(/*dim=*/-1) / blocks.pow(2).mean(/*dim=*/-1).sqrt()).mean().item<double>();
}

// Gaussian blocks [n, 16] with `count` values per block replaced by outliers of +-[lo, hi) (random signs).
torch::Tensor with_outliers(const torch::Tensor& gauss, int64_t count, double lo, double hi) {
  const int64_t n = gauss.size(0);
  auto o = gauss.options();
  const torch::Tensor pos = torch::rand({n, kBlock}, o)
                                .argsort(/*stable=*/false, /*dim=*/1, /*descending=*/false)
                                .narrow(/*dim=*/1, 0, count);
  const torch::Tensor mag = lo + (hi - lo) * torch::rand({n, count}, o);
  const torch::Tensor sign = torch::randint(0, 2, {n, count}, o) * 2 - 1;
  return gauss.scatter(/*dim=*/1, pos, sign * mag);
}

Hadamard measure_hadamard(const lab::Context& ctx) {
  const int64_t n = ctx.size(kRhtBlocks, kRhtBlocks, kRhtBlocksQuick);
  const torch::Tensor t = random_hadamard(torch::randint(0, 2, {kBlock}, torch::kDouble) * 2 - 1);
  const torch::Tensor gauss = torch::randn({n, kBlock}, torch::device(ctx.device));
  const torch::Tensor several = with_outliers(gauss, kOutliers, kOutlierLow, kOutlierHigh);
  const torch::Tensor single = with_outliers(gauss, 1, kOutlierHigh / 2, kOutlierHigh / 2);
  Hadamard h;
  h.ratio_before = amax_to_rms(f64(several));
  h.ratio_after = amax_to_rms(f64(several).mm(t));
  h.sqnr_before = nvfp4_sqnr(several, {});
  h.sqnr_after = nvfp4_sqnr(several, t);
  h.single_ratio_before = amax_to_rms(f64(single));
  h.single_ratio_after = amax_to_rms(f64(single).mm(t));
  h.single_before = nvfp4_sqnr(single, {});
  h.single_after = nvfp4_sqnr(single, t);
  h.gauss_before = nvfp4_sqnr(gauss, {});
  h.gauss_after = nvfp4_sqnr(gauss, t);
  return h;
}

struct Result {
  lab::Context ctx;
  Transpose transpose;
  Formats formats;
  Gradients grads;
  Hadamard hadamard;
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx};
  m.transpose = measure_transpose(ctx);
  m.formats = measure_formats(ctx);
  m.grads = measure_gradients(ctx);
  m.hadamard = measure_hadamard(ctx);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

void report_transpose(const Result& m, lab::Report& r) {
  const Transpose& t = m.transpose;
  r.dtypes("E2M1 and E4M3",
           "FP4 E2M1 values, E4M3 scales per 16 (E8M0 per 32 for MXFP4), float64 references");
  if (m.ctx.flip) r.note("FLIP: W^T in 1x16 blocks beside W's 16x16 tiles; gradients rounded to nearest");
  r.section(
      fmt::format("W [{0} x {0}] in NVFP4, quantized along its rows (for y = x W^T) and along its "
                  "columns (for dx = dy W)",
                  kWeight));
  r.observe("mismatch_1d", "1x16 blocks: values that differ, rows against columns", t.mismatch_1d, "",
            lab::percent(t.mismatch_1d));
  r.observe("mismatch_2d", "16x16 tiles: values that differ, rows against columns", t.mismatch_2d, "",
            lab::percent(t.mismatch_2d));
  r.observe("mismatch_2d_cols", "16x16 tiles against 1x16 blocks along the columns", t.mismatch_2d_cols, "",
            lab::percent(t.mismatch_2d_cols));
  r.observe("dgrad_1d", "dy W, columns' W against rows' W: relative difference, 1x16", t.dgrad_1d, "",
            lab::percent(t.dgrad_1d, 2));
  r.observe("dgrad_2d", "... the same, 16x16", t.dgrad_2d, "", lab::percent(t.dgrad_2d, 2));
  r.observe("sqnr_w_1d", "W's SQNR, 1x16 blocks along the rows", t.sqnr_1d, "dB",
            fmt::format("{:.2f} dB", t.sqnr_1d));
  r.observe("sqnr_w_2d", "W's SQNR, 16x16 tiles", t.sqnr_2d, "dB", fmt::format("{:.2f} dB", t.sqnr_2d));
  r.observe("w_scale_max_1d", "W's largest 1x16 block scale (E4M3, under the per-tensor scale)",
            t.largest_scale_1d, "", lab::num(t.largest_scale_1d));
}

void report_formats(const Result& m, lab::Report& r) {
  const Formats& f = m.formats;
  r.detail_section("NVFP4 (amp.cpp's two-level scale) and MXFP4 (E8M0 per 32) on the same tensors: SQNR");
  auto db = [](double v) { return fmt::format("{:.2f} dB", v); };
  r.observe("sqnr_nvfp4_gauss", "Gaussian: NVFP4", f.nv_gauss, "dB", db(f.nv_gauss));
  r.observe("sqnr_mxfp4_gauss", "Gaussian: MXFP4", f.mx_gauss, "dB", db(f.mx_gauss));
  r.observe("sqnr_nvfp4_heavy", "Student-t: NVFP4", f.nv_heavy, "dB", db(f.nv_heavy));
  r.observe("sqnr_mxfp4_heavy", "Student-t: MXFP4", f.mx_heavy, "dB", db(f.mx_heavy));
  const ScaleChecks& c = f.scale;
  r.detail_section("amp.cpp's scales");
  r.observe("per_tensor_ratio", "per-tensor scale / (amax / (448 x 6)), Gaussian", c.ratio, "x",
            lab::num(c.ratio));
  r.observe("blocks_off", "block scales off amax / 6 / per-tensor by more than E4M3's rounding", c.blocks_off,
            "", lab::percent(c.blocks_off));
  r.observe("not_e4m3", "block scales no E4M3 byte holds", c.not_e4m3, "", lab::percent(c.not_e4m3));
  r.observe("wide_worst_block_error", "blocks over 13 binades: largest block rms error / block rms",
            c.worst_block_error, "", lab::num(c.worst_block_error, 3));
}

void report_gradients(const Result& m, lab::Report& r) {
  const Gradients& g = m.grads;
  r.detail_section(
      fmt::format("Small gradients ({:g} each, 1 the largest of each block): their sum's error", kSmallGrad));
  r.observe("sum_error_rtn", "rounded to nearest", g.rtn_error, "", lab::percent(g.rtn_error, 2));
  r.observe("sum_error_sr", "rounded stochastically", g.sr_error, "", lab::percent(g.sr_error, 2));
  r.observe("sum_sigma_sr", "... its standard deviation (a bound)", g.sigma, "", lab::percent(g.sigma, 2));
  const Hadamard& h = m.hadamard;
  r.detail_section(
      fmt::format("A random Hadamard transform of size 16: blocks with {} outliers of {:g} .. {:g} "
                  "(rms 1 elsewhere)",
                  kOutliers, kOutlierLow, kOutlierHigh));
  auto db = [](double v) { return fmt::format("{:.2f} dB", v); };
  r.observe("amax_rms_before", "mean amax / rms of a block", h.ratio_before, "", lab::num(h.ratio_before, 3));
  r.observe("amax_rms_after", "... after the transform", h.ratio_after, "", lab::num(h.ratio_after, 3));
  r.observe("sqnr_outliers_plain", "NVFP4's SQNR", h.sqnr_before, "dB", db(h.sqnr_before));
  r.observe("sqnr_outliers_rht", "... with the transform (undone after)", h.sqnr_after, "dB",
            db(h.sqnr_after));
  r.detail_section(
      fmt::format("The same, one outlier of {:g} a block, and Gaussian blocks", kOutlierHigh / 2));
  r.observe("amax_rms_single_before", "one outlier: mean amax / rms", h.single_ratio_before, "",
            lab::num(h.single_ratio_before, 3));
  r.observe("amax_rms_single_after", "... after the transform", h.single_ratio_after, "",
            lab::num(h.single_ratio_after, 3));
  r.observe("sqnr_single_plain", "one outlier: NVFP4's SQNR", h.single_before, "dB", db(h.single_before));
  r.observe("sqnr_single_rht", "... with the transform", h.single_after, "dB", db(h.single_after));
  r.observe("sqnr_gauss_plain", "Gaussian blocks: NVFP4's SQNR", h.gauss_before, "dB", db(h.gauss_before));
  r.observe("sqnr_gauss_rht", "... with the transform", h.gauss_after, "dB", db(h.gauss_after));
}

// The checks that do not depend on amp.cpp: the library, the transposes, the gradients, the transform.
void report_library_checks(const Result& m, lab::Report& r) {
  const Transpose& t = m.transpose;
  // Catches a library quantizer that differs from the formats (scale rule, tile, element rounding).
  const bool library = m.formats.library_nv && m.formats.library_mx && t.library_2d;
  r.check("library-matches-float64",
          "amp::nvfp4_quantize (1x16) and nvfp4_quantize_2d (16x16) give float64's scales (within E4M3's "
          "rounding) and nearest E2M1 values; amp::mx_fake_quantize (MXFP4) equals float64's",
          library,
          fmt::format("NVFP4 1x16 {}, 16x16 {}, MXFP4 {}", m.formats.library_nv ? "matches" : "differs",
                      t.library_2d ? "matches" : "differs", m.formats.library_mx ? "equal" : "differs"));
  // The lab's point: blocks along rows and along columns round W differently.
  r.check("1d-transpose-disagrees",
          fmt::format("1x16 blocks along W's rows and along its columns round at least {:.0f}% of W's values "
                      "differently",
                      100 * kMismatch1d),
          t.mismatch_1d >= kMismatch1d, fmt::format("{} differ", lab::percent(t.mismatch_1d)));
  // Catches 2D scales that depend on the cut's direction. Fails under --flip (W^T in 1x16 blocks).
  r.check(
      "2d-transpose-identical",
      "16x16 tiles give W and W^T the same values: no value differs, rows against columns",
      t.mismatch_2d == 0,
      fmt::format("{} differ; dy W differs by {}", lab::percent(t.mismatch_2d), lab::percent(t.dgrad_2d, 2)));
  const Gradients& g = m.grads;
  // Catches biased rounding of gradients. Fails under --flip (round to nearest).
  r.check(
      "sr-unbiased",
      fmt::format("stochastic rounding's sum of the small gradients is within {:g} standard deviations of "
                  "float64's",
                  kSrSigmas),
      std::abs(g.sr_error) <= kSrSigmas * g.sigma,
      fmt::format("error {} (standard deviation {})", lab::percent(g.sr_error, 2), lab::percent(g.sigma, 2)));
  r.check("rtn-biased",
          fmt::format("round-to-nearest's sum of the small gradients is off float64's by at least {:.0f}%",
                      100 * kRtnBias),
          std::abs(g.rtn_error) >= kRtnBias, fmt::format("error {}", lab::percent(g.rtn_error, 2)));
  const Hadamard& h = m.hadamard;
  // The transform spreads a block's outliers over its 16 values (its rows are orthonormal).
  r.check(
      "rht-lowers-amax-ratio",
      fmt::format("the transform brings the mean amax / rms of blocks with outliers to at most {:g}x what it "
                  "was (4 outliers and 1)",
                  kRhtRatioDrop),
      h.ratio_after <= kRhtRatioDrop * h.ratio_before &&
          h.single_ratio_after <= kRhtRatioDrop * h.single_ratio_before,
      fmt::format("4 outliers {:.3f} -> {:.3f}, 1 outlier {:.3f} -> {:.3f}", h.ratio_before, h.ratio_after,
                  h.single_ratio_before, h.single_ratio_after));
  // Outliers of mixed sizes fall in E2M1's coarse top binade (4 .. 6, one step of 2); spread by the
  // transform, the values look Gaussian to the quantizer.
  r.check("rht-lowers-error",
          fmt::format(
              "on blocks with {} outliers, NVFP4 after the transform (undone in float64) is at least {:g} "
              "dB more accurate",
              kOutliers, kRhtGainDb),
          h.sqnr_after >= h.sqnr_before + kRhtGainDb,
          fmt::format("{:.2f} dB -> {:.2f} dB (one outlier {:.2f} -> {:.2f}, Gaussian {:.2f} -> {:.2f})",
                      h.sqnr_before, h.sqnr_after, h.single_before, h.single_after, h.gauss_before,
                      h.gauss_after));
}

// A named value for the report: a NaN (from a NaN scale) becomes `fallback`, outside every hint's range.
double finite_or(double v, double fallback) {
  return std::isnan(v) ? fallback : v;
}

// The checks on amp.cpp's two-level scale.
void report_scale_checks(const Result& m, lab::Report& r) {
  const Formats& f = m.formats;
  const ScaleChecks& c = f.scale;
  // Catches a per-tensor scale that is not amax / (448 x 6): missing (1), another constant, the reciprocal,
  // or from another statistic than the amax.
  r.check("per-tensor-scale", "amp.cpp's per-tensor scale is amax / (448 x 6), within fp32's rounding",
          c.worst_ratio_error <= kScaleTolerance,
          fmt::format("Gaussian: {} x amax / 2688; worst relative error {}", lab::num(c.ratio),
                      lab::sci(c.worst_ratio_error)),
          {{"ratio", finite_or(c.ratio, -1)},
           {"times_reference", finite_or(c.times_want, -1)},
           {"is_one", c.is_one}});
  // Catches block scales kept in fp32 (or NaN, inf, 0): no E4M3 byte holds them.
  r.check("block-scales-e4m3", "every block scale amp.cpp gives is a positive value E4M3 holds",
          c.not_e4m3 == 0, fmt::format("{} are not", lab::percent(c.not_e4m3)), {{"not_e4m3", c.not_e4m3}});
  // Catches a block scale not relative to the per-tensor scale, or from another statistic than the block's
  // largest magnitude (its mean, its largest signed value).
  r.check("block-scale-fits",
          "each block scale is its block's amax / 6 / the per-tensor scale, within E4M3's rounding",
          c.blocks_off == 0,
          fmt::format("{} of the blocks are off; median scale x per-tensor / (amax / 6) {}",
                      lab::percent(c.blocks_off), lab::num(c.median_ratio)),
          {{"blocks_off", c.blocks_off}, {"median_ratio", finite_or(c.median_ratio, -1)}});
  // Catches 0 / 0: a per-tensor scale of 0 for a tensor of zeros, a block scale of 0 for a block of zeros.
  r.check("zeros-stay-zero",
          "a tensor of zeros and a block of zeros get finite positive scales and dequantize to zeros",
          c.zero_tensor && c.zero_block,
          fmt::format("tensor of zeros {}, block of zeros {}", c.zero_tensor ? "zeros" : "not zeros (NaN)",
                      c.zero_block ? "zeros" : "not zeros (NaN)"),
          {{"zero_tensor", c.zero_tensor}, {"zero_block", c.zero_block}});
  // The per-tensor level's purpose: blocks far below (or above) 1 keep E4M3's range. Catches block scales
  // alone, or a per-tensor scale that leaves the small blocks' scales below E4M3's normals.
  r.check(
      "two-level-keeps-small-blocks",
      fmt::format("on blocks of magnitudes 2^{} .. 2^{}, every block's rms error stays below {:g} of its rms",
                  kWideLow, kWideHigh, kBlockErrorMax),
      c.worst_block_error <= kBlockErrorMax, fmt::format("largest {}", lab::num(c.worst_block_error, 3)),
      {{"worst_block_error", finite_or(c.worst_block_error, 1e300)}});
  const double gain_gauss = f.nv_gauss - f.mx_gauss, gain_heavy = f.nv_heavy - f.mx_heavy;
  // The format's point, with amp.cpp's scale: E4M3 scales per 16 fit a block closer than E8M0 per 32.
  r.check("nvfp4-beats-mxfp4",
          fmt::format("NVFP4 with amp.cpp's scale beats MXFP4 by at least {:g} dB, Gaussian and Student-t",
                      kNvfp4GainDb),
          gain_gauss >= kNvfp4GainDb && gain_heavy >= kNvfp4GainDb,
          fmt::format("Gaussian {:.2f} against {:.2f} dB, Student-t {:.2f} against {:.2f} dB", f.nv_gauss,
                      f.mx_gauss, f.nv_heavy, f.mx_heavy),
          {{"gain_gauss", finite_or(gain_gauss, -1e300)}, {"gain_heavy", finite_or(gain_heavy, -1e300)}});
  r.takeaway(
      "NVFP4 scales every 16 values by an E4M3 scale under an FP32 one per tensor; quantize weights in 16x16 "
      "tiles so that W and W^T are the same numbers, and round gradients stochastically");
}

void report(const Result& m, lab::Report& r) {
  report_transpose(m, r);
  report_formats(m, r);
  report_gradients(m, r);
  report_library_checks(m, r);
  report_scale_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
