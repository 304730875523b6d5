// Lab 18: one scale per block of 32, the MX formats (quiz question 18). The AMP code is in amp.cpp.
//
// OCP Microscaling Formats (MX) v1.0 (2023) cut a tensor's rows into blocks of 32 values that share one
// power-of-two scale (E8M0: an 8-bit exponent), each value an FP8 E4M3 (MXFP8) or FP4 E2M1 (MXFP4) element.
// The lab
//   1. quantizes a tensor like a layer's activations (Gaussian, a few channels 512x larger: outlier
//      channels) to E4M3 and to E2M1 with one scale per tensor (amax / element max), one per row, and
//      one E8M0 scale per block of 32 along the channels (amp::mx_fake_quantize, the spec's rule, checked
//      against the lab's own float64 quantizer): the SQNR over all values and over the ordinary channels,
//      and the share of ordinary values flushed to zero;
//   2. rounds the E8M0 scale two ways on Gaussian and heavy-tailed (Student-t, 3 degrees of freedom)
//      blocks: the spec's 2^(floor(log2(amax)) - emax) (the lab's float64) and amp.cpp's rounding up, and
//      counts the values each saturates (those that round past the element's largest value) and the error;
//   3. trains a small MLP whose matmuls' inputs are MX fake-quantized in the forward and backward passes
//      (amp::mx_linear: E4M3 elements, blocks of 32, both scale rules), against fp32 and bf16 matmuls.
// Every reference (block amax, the exact E8M0 exponent, the element rounding, the losses) is float64 and
// written here. Mishra, Stosic and Layton (arXiv 2506.08027, 2025) report that the spec's rounding can make
// MXFP8 pre-training diverge and that rounding the scale up matched bf16 on an 8B model over 15T tokens:
// their result, not this lab's; this lab's runs are small and short.
//
// Run:  build/bin/lab18_mx_blocks [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (--dtype does not apply: the lab's formats are E4M3 and E2M1)
// --flip: no outlier channels: one scale per tensor or per row quantizes the ordinary values nearly as
//         well as the blocks do, so checks blocks-beat-per-tensor and per-row-no-help fail.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/mx.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

using namespace lab18;

constexpr int64_t kBlock = 32;           // the MX block
constexpr int64_t kRows = 128;           // activations: tokens
constexpr int64_t kChannels = 512;       // ... and channels (16 blocks a row)
constexpr int64_t kOutlierChannels = 4;  // channels 512x the others (LLM activations have a few)
constexpr double kOutlierGain = 512;     // their scale, against the ordinary channels' 1
constexpr int64_t kBlocks = 4096;        // blocks per distribution in the rounding comparison
constexpr int64_t kBlocksQuick = 1024;   // ... in quick mode
constexpr double kStudentDof = 3;        // the heavy-tailed blocks: Student-t, 3 degrees of freedom
constexpr double kBlocksGainDb = 6;      // blocks beat per-tensor by at least this on ordinary values
constexpr double kRowGainDb = 1;         // per-row scales gain less than this over per-tensor
constexpr double kRowFlushed = 0.9;      // ... and FP4 per row flushes at least this share of ordinary values
constexpr int64_t kIn = 64, kHidden = 64, kOut = 32, kBatch = 256;  // the MLP and its batch
constexpr int64_t kHeldOut = 1024;    // held-out samples the final losses are measured on
constexpr int64_t kSteps = 80;        // Adam steps per training run
constexpr int64_t kStepsQuick = 30;   // ... in quick mode
constexpr double kLr = 1e-2;          // Adam's learning rate
constexpr double kTargetNoise = 0.3;  // the targets' noise, relative to their standard deviation
constexpr double kTrainRatio = 1.1;   // MXFP8 training ends within 1.1x fp32's final loss

// An element format as the lab's float64 rounding needs it.
struct Format {
  const char* name;
  torch::ScalarType dtype;  // the library's element dtype
  int mantissa_bits;
  int min_exponent;  // of its smallest normal: E4M3 -6, E2M1 0
  int emax;          // of its largest power of two: E4M3 8, E2M1 2
  double max;        // its largest finite value
};
const Format kE4m3{"E4M3", torch::kFloat8_e4m3fn, 3, -6, 8, 448};
const Format kE2m1{"E2M1", torch::kFloat4_e2m1fn_x2, 1, 0, 2, 6};

// ---- the lab's float64 quantizer ---------------------------------------------------------------------

// floor(log2(|v|)) of doubles, exactly (frexp), for v != 0.
torch::Tensor floor_log2(const torch::Tensor& v) {
  auto [mantissa, exponent] = torch::frexp(v);
  return (exponent - 1).to(torch::kDouble);
}

// y (float64) rounded to nearest even on the format's grid (subnormals included), then clamped to +-max:
// the element cast, in float64.
torch::Tensor round_to_format(const torch::Tensor& y, const Format& f) {
  const torch::Tensor e = floor_log2(torch::where(y.eq(0), torch::ones_like(y), y)).clamp_min(f.min_exponent);
  const torch::Tensor spacing = torch::exp2(e - f.mantissa_bits);
  return (torch::round(y / spacing) * spacing).clamp(-f.max, f.max);
}

// Whether |y| would round past the format's largest value (it saturates to it): above max + half the
// spacing of the top binade.
torch::Tensor saturates(const torch::Tensor& y, const Format& f) {
  return y.abs() > f.max + std::ldexp(0.5, f.emax - f.mantissa_bits);
}

// The spec's E8M0 scale of each block (rows of [n, 32], float64): 2^(floor(log2(amax)) - emax).
torch::Tensor floor_scale(const torch::Tensor& blocks, const Format& f) {
  const torch::Tensor amax = blocks.abs().amax(/*dim=*/-1, /*keepdim=*/true);
  const torch::Tensor safe = torch::where(amax.eq(0), torch::ones_like(amax), amax);
  return torch::exp2((floor_log2(safe) - f.emax).clamp(-127, 127));
}

// x (float64, [rows, cols]) quantized with `scale` (broadcast) and dequantized, in float64.
torch::Tensor fake_quantize(const torch::Tensor& x, const torch::Tensor& scale, const Format& f) {
  return round_to_format(x / scale, f) * scale;
}

torch::Tensor per_block(const torch::Tensor& x, const Format& f) {
  const torch::Tensor blocks = x.reshape({-1, kBlock});
  return fake_quantize(blocks, floor_scale(blocks, f), f).view(x.sizes());
}

double sqnr_db(const torch::Tensor& x, const torch::Tensor& q) {
  return 10 * std::log10(x.pow(2).sum().item<double>() / (x - q).pow(2).sum().item<double>());
}

// ---- 1. activations with outlier channels ----------------------------------------------------------

struct Scheme {
  std::string key, label;
  double sqnr_all = 0, sqnr_ordinary = 0, flushed = 0;  // dB, dB, share of ordinary values
};

struct Activations {
  std::vector<Scheme> schemes;
  bool library_matches = false;  // amp::mx_fake_quantize == the lab's float64 MX, both formats
  double outlier_ratio = 0;      // amax / the ordinary channels' rms
};

Activations measure_activations(const lab::Context& ctx) {
  torch::Tensor gain = torch::ones({kChannels}, torch::kDouble);
  if (!ctx.flip) gain.index_put_({torch::randperm(kChannels).slice(0, 0, kOutlierChannels)}, kOutlierGain);
  const torch::Tensor x32 = (torch::randn({kRows, kChannels}, torch::kDouble) * gain).to(torch::kFloat);
  const torch::Tensor x = x32.to(torch::kDouble);
  const torch::Tensor ordinary = gain.eq(1).expand_as(x);
  Activations a;
  a.outlier_ratio =
      x.abs().max().item<double>() / x.masked_select(ordinary).pow(2).mean().sqrt().item<double>();
  auto add = [&](std::string key, std::string label, const torch::Tensor& q) {
    const torch::Tensor xo = x.masked_select(ordinary), qo = q.masked_select(ordinary);
    a.schemes.push_back({std::move(key), std::move(label), sqnr_db(x, q), sqnr_db(xo, qo),
                         (qo.eq(0) & xo.ne(0)).to(torch::kDouble).mean().item<double>()});
  };
  a.library_matches = true;
  for (const Format* f : {&kE4m3, &kE2m1}) {
    const std::string n = f == &kE4m3 ? "fp8" : "fp4";
    const torch::Tensor tensor_scale = x.abs().max() / f->max;
    const torch::Tensor row_scale = x.abs().amax(/*dim=*/1, /*keepdim=*/true) / f->max;
    add(n + "_tensor", fmt::format("{}, one scale per tensor", f->name), fake_quantize(x, tensor_scale, *f));
    add(n + "_row", fmt::format("{}, one scale per row", f->name), fake_quantize(x, row_scale, *f));
    const torch::Tensor lib =
        amp::mx_fake_quantize(x32.to(ctx.device), f->dtype, kBlock, amp::MxScaleMode::Floor).cpu();
    add(n + "_mx", fmt::format("MX{}: {}, E8M0 per 32", f == &kE4m3 ? "FP8" : "FP4", f->name),
        lib.to(torch::kDouble));
    a.library_matches = a.library_matches && torch::equal(lib.to(torch::kDouble), per_block(x, *f));
  }
  return a;
}

// ---- 2. the scale's rounding -------------------------------------------------------------------------

struct Rounding {
  double sat_floor = 0, sat_up = 0;    // share of values saturated
  double blocks_sat_floor = 0;         // share of blocks with a saturated value (floor)
  double sqnr_floor = 0, sqnr_up = 0;  // dB
};

struct ScaleChecks {
  bool e8m0 = true;             // every scale amp.cpp gave is 2^e, e an integer in [-127, 127]
  double not_e8m0 = 0;          // the largest share of its scales that are not, over all runs
  double worst_waste = 0;       // largest scale / the smallest power of two keeping amax within max
  bool zero_ok = true;          // a block of zeros gets an E8M0 scale and stays zeros
  double zero_scale = 0;        // the scale it gave a block of zeros (E4M3's)
  double sat_up_max = 0;        // the largest saturated share amp.cpp's scale left, over all runs
  int64_t sat_up_values = 0;    // the values it saturated, all runs
  int64_t sat_up_negative = 0;  // ... of them negative
  bool up_nonfinite = false;    // a run whose error was not finite (a NaN, inf or 0 scale)
};

// max that keeps a NaN: a NaN in either makes the result NaN (the checks' comparisons then fail).
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
}

bool is_e8m0(const torch::Tensor& s) {
  const torch::Tensor l = torch::log2(s);
  return torch::isfinite(s).all().item<bool>() && (s > 0).all().item<bool>() &&
         l.eq(torch::round(l)).all().item<bool>() && (l.abs() <= 127).all().item<bool>();
}

Rounding measure_rounding(const torch::Tensor& blocks32, const Format& f, ScaleChecks& c) {
  const torch::Tensor blocks = blocks32.to(torch::kDouble);
  const torch::Tensor fs = floor_scale(blocks, f);
  // amp.cpp's scale, from the fp32 blocks, read as float64.
  const torch::Tensor us = e8m0_block_scale(blocks32, f.max).to(torch::kCPU).to(torch::kDouble);
  if (us.sizes() != fs.sizes()) throw std::runtime_error("e8m0_block_scale must return one scale per block");
  c.e8m0 = c.e8m0 && is_e8m0(us);
  const torch::Tensor l = torch::log2(us);
  const torch::Tensor ok = torch::isfinite(us) & (us > 0) & l.eq(torch::round(l)) & (l.abs() <= 127);
  c.not_e8m0 = nan_max(c.not_e8m0, 1 - ok.to(torch::kDouble).mean().item<double>());
  const torch::Tensor amax = blocks.abs().amax(-1, true);
  const torch::Tensor tight = torch::exp2(torch::ceil(torch::log2(amax / f.max)));
  c.worst_waste = nan_max(c.worst_waste, (us / tight).max().item<double>());
  Rounding r;
  const torch::Tensor sat_f = saturates(blocks / fs, f), sat_u = saturates(blocks / us, f);
  r.sat_floor = sat_f.to(torch::kDouble).mean().item<double>();
  r.sat_up = sat_u.to(torch::kDouble).mean().item<double>();
  // A NaN scale saturates nothing by this count: its error (NaN) and is_e8m0 catch it.
  r.blocks_sat_floor = sat_f.any(/*dim=*/-1).to(torch::kDouble).mean().item<double>();
  r.sqnr_floor = sqnr_db(blocks, fake_quantize(blocks, fs, f));
  r.sqnr_up = sqnr_db(blocks, fake_quantize(blocks, us, f));
  // A scale that is not finite (NaN, inf, 0) leaves no value in range: counted as saturating all.
  c.up_nonfinite = c.up_nonfinite || !std::isfinite(r.sqnr_up);
  if (!std::isfinite(r.sqnr_up)) r.sat_up = std::max(r.sat_up, 1.0);
  c.sat_up_max = std::max(c.sat_up_max, r.sat_up);
  c.sat_up_values += sat_u.sum().item<int64_t>();
  c.sat_up_negative += (sat_u & (blocks < 0)).sum().item<int64_t>();
  return r;
}

struct Roundings {
  Rounding gauss_fp8, gauss_fp4, heavy_fp8, heavy_fp4;
  ScaleChecks scale;
};

Roundings measure_roundings(const lab::Context& ctx) {
  const int64_t n = ctx.size(kBlocks, kBlocks, kBlocksQuick);
  const torch::Tensor gauss = torch::randn({n, kBlock});
  // Student-t: z / sqrt(chi2_dof / dof), chi2 a sum of dof squared normals.
  const torch::Tensor chi2 = torch::randn({n, kBlock, static_cast<int64_t>(kStudentDof)}).pow(2).sum(-1);
  const torch::Tensor heavy = torch::randn({n, kBlock}) / (chi2 / kStudentDof).sqrt();
  Roundings m;
  auto on = [&](const torch::Tensor& b) { return b.to(ctx.device); };
  m.gauss_fp8 = measure_rounding(on(gauss), kE4m3, m.scale);
  m.gauss_fp4 = measure_rounding(on(gauss), kE2m1, m.scale);
  m.heavy_fp8 = measure_rounding(on(heavy), kE4m3, m.scale);
  m.heavy_fp4 = measure_rounding(on(heavy), kE2m1, m.scale);
  // A block of zeros (a dead channel's, after a ReLU): any E8M0 scale will do, and it must stay zeros.
  for (const Format* f : {&kE4m3, &kE2m1}) {
    const torch::Tensor zeros = torch::zeros({1, kBlock}, torch::device(ctx.device));
    const torch::Tensor s = e8m0_block_scale(zeros, f->max).to(torch::kCPU).to(torch::kDouble);
    const bool ok = s.sizes() == torch::IntArrayRef({1, 1}) && is_e8m0(s) &&
                    fake_quantize(zeros.cpu().to(torch::kDouble), s, *f).eq(0).all().item<bool>();
    m.scale.zero_ok = m.scale.zero_ok && ok;
    if (f == &kE4m3) m.scale.zero_scale = s.numel() == 1 ? s.item<double>() : std::nan("");
  }
  return m;
}

// ---- 3. a small MLP, MX fake-quantized ---------------------------------------------------------------

enum class Matmul { Fp32, Bf16, MxFloor, MxUp };

struct Mlp {
  torch::Tensor w1, b1, w2, b2;
};

torch::Tensor forward(const Mlp& p, const torch::Tensor& x, Matmul kind) {
  auto linear = [&](const torch::Tensor& in, const torch::Tensor& w, const torch::Tensor& b) {
    switch (kind) {
      case Matmul::Fp32:
        return torch::linear(in, w, b);
      case Matmul::Bf16:  // as bf16 autocast runs linear: bf16 inputs, bf16 output
        return torch::linear(in.to(torch::kBFloat16), w.to(torch::kBFloat16), b.to(torch::kBFloat16))
            .to(torch::kFloat);
      default:
        return amp::mx_linear(
            in, w, b, {.mode = kind == Matmul::MxFloor ? amp::MxScaleMode::Floor : amp::MxScaleMode::RCeil});
    }
  };
  return linear(torch::relu(linear(x, p.w1, p.b1)), p.w2, p.b2);
}

// The lab's float64 forward of p's weights.
double eval_loss(const Mlp& p, const torch::Tensor& x, const torch::Tensor& y) {
  auto d = [](const torch::Tensor& t) { return t.detach().to(torch::kDouble); };
  const torch::Tensor h = torch::relu(torch::linear(d(x), d(p.w1), d(p.b1)));
  return torch::mse_loss(torch::linear(h, d(p.w2), d(p.b2)), d(y)).item<double>();
}

Mlp init_mlp(const lab::Context& ctx) {
  auto o = torch::device(ctx.device);
  return {torch::randn({kHidden, kIn}, o) / std::sqrt(double(kIn)), torch::zeros({kHidden}, o),
          torch::randn({kOut, kHidden}, o) / std::sqrt(double(kHidden)), torch::zeros({kOut}, o)};
}

Mlp copy_of(const Mlp& p) {
  auto c = [](const torch::Tensor& t) { return t.detach().clone().requires_grad_(); };
  return {c(p.w1), c(p.b1), c(p.w2), c(p.b2)};
}

struct Training {
  double initial = 0, fp32 = 0, bf16 = 0, mx_floor = 0, mx_up = 0;  // final float64 MSE, held out
};

Training measure_training(const lab::Context& ctx) {
  const Mlp teacher = init_mlp(ctx), student = init_mlp(ctx);
  auto data = [&](int64_t n) {
    torch::NoGradGuard no_grad;
    const torch::Tensor x = torch::randn({n, kIn}, torch::device(ctx.device));
    const torch::Tensor clean = forward(teacher, x, Matmul::Fp32);
    return std::make_pair(x, clean + kTargetNoise * clean.std() * torch::randn_like(clean));
  };
  const auto [x, y] = data(kBatch);
  const auto [x_test, y_test] = data(kHeldOut);
  const int64_t steps = ctx.size(kSteps, kSteps, kStepsQuick);
  auto train = [&](Matmul kind) {
    Mlp p = copy_of(student);
    torch::optim::Adam opt({p.w1, p.b1, p.w2, p.b2}, torch::optim::AdamOptions(kLr));
    for (int64_t s = 0; s < steps; ++s) {
      opt.zero_grad();
      torch::mse_loss(forward(p, x, kind), y).backward();
      opt.step();
    }
    return eval_loss(p, x_test, y_test);
  };
  Training t;
  t.initial = eval_loss(student, x_test, y_test);
  t.fp32 = train(Matmul::Fp32);
  t.bf16 = train(Matmul::Bf16);
  t.mx_floor = train(Matmul::MxFloor);
  t.mx_up = train(Matmul::MxUp);
  return t;
}

struct Result {
  lab::Context ctx;
  Activations act;
  Roundings round;
  Training train;
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx};
  m.act = measure_activations(ctx);
  m.round = measure_roundings(ctx);
  m.train = measure_training(ctx);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

const Scheme& scheme(const Result& m, const std::string& key) {
  for (const Scheme& s : m.act.schemes)
    if (s.key == key) return s;
  throw std::out_of_range(key);
}

void report_activations(const Result& m, lab::Report& r) {
  r.dtypes("E4M3 and E2M1", "FP8 E4M3 and FP4 E2M1 elements, E8M0 block scales, float64 references");
  if (m.ctx.flip) r.note("FLIP: no outlier channels");
  // A detail (after the answer): the question is on the scale's rounding, below; this is the case for blocks.
  r.detail_section(
      fmt::format("Activations [{} x {}], {} outlier channels: SQNR (dB) and ordinary values flushed", kRows,
                  kChannels, m.ctx.flip ? 0 : kOutlierChannels));
  r.observe("outlier_ratio", "largest |value| / the ordinary channels' rms", m.act.outlier_ratio, "",
            lab::num(m.act.outlier_ratio, 3));
  for (const Scheme& s : m.act.schemes) {
    r.observe("sqnr_" + s.key, s.label + ": SQNR, all values", s.sqnr_all, "dB",
              fmt::format("{:.1f} dB", s.sqnr_all));
    r.observe("sqnr_ordinary_" + s.key, "... SQNR of the ordinary channels", s.sqnr_ordinary, "dB",
              fmt::format("{:.1f} dB", s.sqnr_ordinary));
    r.observe("flushed_" + s.key, "... ordinary values flushed to zero", s.flushed, "",
              lab::percent(s.flushed));
  }
}

void report_rounding(const Result& m, lab::Report& r) {
  r.section("The E8M0 scale rounded down (OCP spec) or up (amp.cpp): values saturated, SQNR");
  auto row = [&](const std::string& key, const std::string& what, const Rounding& x) {
    r.observe("sat_floor_" + key, what + ", floor: values saturated", x.sat_floor, "",
              lab::percent(x.sat_floor, 2));
    r.observe("blocks_sat_floor_" + key, "... blocks with a saturated value", x.blocks_sat_floor, "",
              lab::percent(x.blocks_sat_floor));
    r.observe("sat_up_" + key, what + ", up: values saturated", x.sat_up, "", lab::percent(x.sat_up, 2));
    r.observe("sqnr_floor_" + key, what + ": SQNR floor", x.sqnr_floor, "dB",
              fmt::format("{:.2f} dB", x.sqnr_floor));
    r.observe("sqnr_up_" + key, what + ": SQNR up", x.sqnr_up, "dB", fmt::format("{:.2f} dB", x.sqnr_up));
  };
  row("gauss_fp8", "Gaussian, MXFP8", m.round.gauss_fp8);
  row("heavy_fp8", "Student-t, MXFP8", m.round.heavy_fp8);
  // MXFP4's rows after the answer: the question's screen holds MXFP8's, which show the rule alone.
  r.detail_section("The same for MXFP4 (E2M1 elements, E8M0 per 32)");
  row("gauss_fp4", "Gaussian, MXFP4", m.round.gauss_fp4);
  row("heavy_fp4", "Student-t, MXFP4", m.round.heavy_fp4);
  const ScaleChecks& c = m.round.scale;
  r.detail_section("amp.cpp's scales, all runs");
  r.observe("up_saturated_max", "largest share of values saturated", c.sat_up_max, "",
            lab::percent(c.sat_up_max, 3));
  const double negative =
      c.sat_up_values > 0 ? static_cast<double>(c.sat_up_negative) / static_cast<double>(c.sat_up_values) : 0;
  r.observe("up_saturated_negative", "... of those saturated, the share negative", negative, "",
            lab::percent(negative));
  r.observe("up_not_e8m0", "largest share of scales that are not E8M0", c.not_e8m0, "",
            lab::percent(c.not_e8m0));
  r.observe("up_waste", "largest scale / the smallest that fits amax", c.worst_waste, "x",
            lab::num(c.worst_waste));
  r.observe("up_zero_block_scale", "the scale of a block of zeros (E4M3)", c.zero_scale, "",
            lab::sci(c.zero_scale));
}

void report_training(const Result& m, lab::Report& r) {
  const Training& t = m.train;
  r.detail_section(fmt::format("An MLP {}-{}-{}, {} Adam steps: final MSE (float64), x fp32's", kIn, kHidden,
                               kOut, m.ctx.size(kSteps, kSteps, kStepsQuick)));
  r.observe("loss_initial", "before training", t.initial, "", lab::sci(t.initial));
  r.observe("loss_fp32", "fp32 matmuls", t.fp32, "", lab::sci(t.fp32));
  auto ratio = [&](const char* key, const char* label, double v) {
    r.observe(key, label, v / t.fp32, "x", fmt::format("{:.3f}x", v / t.fp32));
  };
  ratio("loss_ratio_bf16", "bf16 matmuls", t.bf16);
  ratio("loss_ratio_mx_floor", "MXFP8 fake-quantized, scale floor (spec)", t.mx_floor);
  ratio("loss_ratio_mx_up", "MXFP8 fake-quantized, scale up (RCEIL)", t.mx_up);
}

// The checks on the activations: the library's quantizer, and where blocks help.
void report_scheme_checks(const Result& m, lab::Report& r) {
  const Scheme &t8 = scheme(m, "fp8_tensor"), &w8 = scheme(m, "fp8_row"), &b8 = scheme(m, "fp8_mx");
  const Scheme &t4 = scheme(m, "fp4_tensor"), &w4 = scheme(m, "fp4_row"), &b4 = scheme(m, "fp4_mx");
  // Catches a library MX quantizer that differs from the spec (scale rule, element rounding, block axis).
  r.check(
      "library-matches-float64",
      "amp::mx_fake_quantize (MXFP8, MXFP4, spec scale) equals the lab's float64 MX quantizer bit for bit",
      m.act.library_matches, m.act.library_matches ? "equal" : "differs");
  // The lab's point: an outlier coarsens only its own block. Fails under --flip (no outliers: one scale
  // per tensor is as good).
  const double gain4 = b4.sqnr_ordinary - t4.sqnr_ordinary;
  r.check(
      "blocks-beat-per-tensor",
      fmt::format("with outlier channels, MXFP4's blocks keep the ordinary values at least {:g} dB "
                  "better than one FP4 scale per tensor",
                  kBlocksGainDb),
      gain4 >= kBlocksGainDb,
      fmt::format("ordinary channels: MXFP4 {:.1f} dB, per tensor {:.1f} dB ({} flushed); E4M3: MX {:.1f}, "
                  "per tensor {:.1f} dB",
                  b4.sqnr_ordinary, t4.sqnr_ordinary, lab::percent(t4.flushed), b8.sqnr_ordinary,
                  t8.sqnr_ordinary));
  // Channel outliers sit in every row: a scale per row (per token) flushes the ordinary FP4 values as one
  // per tensor does, and gains nothing in E4M3. Fails under --flip (no outliers: FP4 keeps most values).
  const double row_gain = std::max(w4.sqnr_ordinary - t4.sqnr_ordinary, w8.sqnr_ordinary - t8.sqnr_ordinary);
  r.check("per-row-no-help",
          fmt::format("one FP4 scale per row flushes at least {:.0f}% of the ordinary values, and per-row "
                      "scales gain less than {:g} dB over one per tensor",
                      100 * kRowFlushed, kRowGainDb),
          w4.flushed >= kRowFlushed && row_gain < kRowGainDb,
          fmt::format("FP4 per row: {} flushed; largest gain {:.2f} dB", lab::percent(w4.flushed), row_gain));
}

// The checks on the scale's rounding (amp.cpp's scale among them) and on training.
void report_checks(const Result& m, lab::Report& r) {
  report_scheme_checks(m, r);
  const Roundings& q = m.round;
  // The spec's rule, in float64: amax / scale reaches past the element's maximum in some blocks.
  r.check("floor-saturates", "the spec's scale (floor) saturates values in Gaussian blocks, MXFP8 and MXFP4",
          q.gauss_fp8.sat_floor > 0 && q.gauss_fp4.sat_floor > 0,
          fmt::format("MXFP8 {} of values ({} of blocks), MXFP4 {} ({})",
                      lab::percent(q.gauss_fp8.sat_floor, 2), lab::percent(q.gauss_fp8.blocks_sat_floor),
                      lab::percent(q.gauss_fp4.sat_floor, 2), lab::percent(q.gauss_fp4.blocks_sat_floor)));
  // Catches a scale rounded down or to nearest (floor, round, the spec's rule), or from the wrong amax.
  r.check("up-never-saturates", "amp.cpp's scale saturates no value, Gaussian or heavy-tailed, E4M3 or E2M1",
          q.scale.sat_up_max == 0,
          q.scale.up_nonfinite
              ? std::string("a scale left the error not finite (NaN, inf or 0 scale)")
              : fmt::format("largest share saturated {}", lab::percent(q.scale.sat_up_max, 3)));
  // Catches a scale that is not a power of two (amax / max: no E8M0 byte holds it) or out of E8M0's range.
  r.check("scale-is-e8m0", "every scale amp.cpp gives is 2^e with e an integer in [-127, 127]", q.scale.e8m0,
          q.scale.e8m0 ? "all E8M0" : "a scale no E8M0 byte holds");
  // Catches a scale rounded up too far (a binade or more of the element's range thrown away).
  r.check("scale-is-tight",
          "amp.cpp's scale is at most 2x the smallest power of two that keeps the block's amax within range",
          q.scale.worst_waste <= 2, fmt::format("largest ratio {}", lab::num(q.scale.worst_waste)));
  // Catches log2(0) = -inf left unclamped: a scale of 0 turns a block of zeros into NaN.
  r.check("zero-block-stays-zero", "a block of zeros gets an E8M0 scale and dequantizes to zeros",
          q.scale.zero_ok, q.scale.zero_ok ? "zeros" : "no E8M0 scale, or not zeros");
  const Training& t = m.train;
  r.check("mxfp8-trains",
          fmt::format("MXFP8 fake-quantized training ends within {:g}x fp32's loss (both scale rules)",
                      kTrainRatio),
          t.mx_floor <= kTrainRatio * t.fp32 && t.mx_up <= kTrainRatio * t.fp32,
          fmt::format("floor {:.3f}x, up {:.3f}x (bf16 {:.3f}x)", t.mx_floor / t.fp32, t.mx_up / t.fp32,
                      t.bf16 / t.fp32));
  r.takeaway(
      "a scale per block of 32 confines an outlier to its block; round the E8M0 scale up so that a block's "
      "largest values fit the element format");
}

void report(const Result& m, lab::Report& r) {
  report_activations(m, r);
  report_rounding(m, r);
  report_training(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
