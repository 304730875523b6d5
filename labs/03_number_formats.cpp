// Lab 03: bf16 vs fp16, what the two 16-bit formats trade.
//
// Backs quiz question 3 ("What advantage does bfloat16 have over FP16?"). Both formats have 16 bits;
// bf16 spends 8 of them on the exponent, like fp32, so it has fp32's range (max about 3.4e38, smallest
// normal about 1.2e-38), while fp16 tops out at 65504 and its smallest subnormal is 2^-24 (6e-8): a value
// of at most half of that, 2^-25 (about 3e-8), rounds to zero. The price: bf16 keeps only 7 mantissa
// bits, so it rounds more coarsely than fp16 (10 bits).
//
// 1. A table of fp32, fp16 and bf16 limits read from std::numeric_limits (no hand-typed constants).
// 2. Each format's sign/exponent/mantissa layout, measured from real bit patterns of tensors (the field
//    widths from the patterns of 1, 2 and -1), and pi's bits in each: bf16 is the top half of an fp32.
// 3. Round-trips of a few values through real tensor casts (fp32 -> 16-bit -> fp32) on the device.
// 4. Checks: bf16's range equals fp32's (to bf16 precision); every bf16 bit pattern is the top half of
//    the fp32 pattern of the same value (so it has fp32's 8 exponent bits); the round-trips behave as
//    claimed (70000 and 1e-8 survive only in bf16, fp16 flushes at 2^-25, 1 + 2^-8 survives only in fp16).
//
// This lab shows both 16-bit formats side by side, so --dtype does not change it.
//
// Run alone:  build/bin/lab03_number_formats [--device cpu|cuda] [--quick] [--flip]
// --flip: the "bf16" column is computed with fp16 instead (the wide exponent is removed), so the
//         range checks and the round-trip checks must FAIL.

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "lab/registry.h"

namespace {

// Values to round-trip, each chosen to sit just past one format's limit.
constexpr float kBig = 70000.0f;                   // above fp16's max 65504, far below bf16's max
constexpr float kTiny = 1e-8f;                     // below half of fp16's smallest subnormal 2^-24
constexpr float kHalfSub = 0x1p-25f;               // exactly half of 2^-24: a tie, rounds to even (0)
constexpr float kAboveHalfSub = 0x1.2p-25f;        // just above it: rounds up to 2^-24
constexpr int64_t kPatternSamples = 4096;          // random fp32 values whose bf16 patterns are compared
constexpr float kOnePlus = 1.0f + 1.0f / 256.0f;   // 1 + 2^-8: needs 8 mantissa bits, bf16 has 7

// The numbers numeric_limits knows about one format.
struct Format {
  std::string name;
  double max, min_normal, min_subnormal, epsilon;
  double binades() const { return std::log2(max / min_subnormal); }  // powers of two it spans
};

template <typename T>
Format describe(std::string name) {
  using L = std::numeric_limits<T>;
  return {std::move(name), static_cast<double>(static_cast<float>(L::max())),
          static_cast<double>(static_cast<float>(L::min())),
          static_cast<double>(static_cast<float>(L::denorm_min())),
          static_cast<double>(static_cast<float>(L::epsilon()))};
}

// fp32 -> dtype -> fp32 through tensor casts on the device, one value per element.
std::vector<float> round_trip(const std::vector<float>& values, torch::ScalarType dtype, torch::Device device) {
  auto t = torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat).device(device));
  auto back = t.to(dtype).to(torch::kFloat).cpu().contiguous();
  return {back.data_ptr<float>(), back.data_ptr<float>() + back.numel()};
}

// The bit patterns of `values` stored as `dtype`, read through an integer view of the same bytes.
std::vector<uint32_t> bits_of(const torch::Tensor& values, torch::ScalarType dtype) {
  const auto t = values.to(dtype);
  const auto ints = t.view(t.element_size() == 2 ? torch::kInt16 : torch::kInt32).to(torch::kInt64).cpu().contiguous();
  const uint32_t mask = t.element_size() == 2 ? 0xFFFFu : 0xFFFFFFFFu;  // int16 -1 sign-extends: keep 16 bits
  std::vector<uint32_t> out;
  for (const int64_t* v = ints.data_ptr<int64_t>(); v != ints.data_ptr<int64_t>() + ints.numel(); ++v)
    out.push_back(static_cast<uint32_t>(*v) & mask);
  return out;
}

// Field widths measured from patterns: -1 and 1 differ only in the sign (the top bit); 1 and 2 differ
// only in the exponent field, whose lowest bit sits just above the mantissa.
struct Layout { int bits, exponent, mantissa; std::string pi; };
Layout layout_of(torch::ScalarType dtype, torch::Device device) {
  const auto p = bits_of(torch::tensor({1.0f, 2.0f, -1.0f, std::numbers::pi_v<float>}, torch::device(device)), dtype);
  const int bits = std::bit_width(p[0] ^ p[2]), mantissa = std::countr_zero(p[0] ^ p[1]);
  std::string pi;
  for (int b = bits - 1; b >= 0; --b) {
    pi += ((p[3] >> b) & 1) ? '1' : '0';
    if (b == bits - 1 || b == mantissa) pi += ' ';
  }
  return {bits, bits - 1 - mantissa, mantissa, pi};
}

std::string show(double v) { return std::isinf(v) ? "inf" : (v == 0 ? "0" : lab::num(v, 6)); }

lab::Report run(const lab::Context& ctx) {
  lab::Report r("number-formats", "bf16 keeps fp32's range; fp16 keeps more mantissa bits");
  // --flip: the column labelled bf16 is really fp16 again, the exponent bits it would add are gone.
  const torch::ScalarType wide = ctx.flip ? torch::kHalf : torch::kBFloat16;
  const Format fp32 = describe<float>("fp32");
  const Format fp16 = describe<c10::Half>("fp16");
  const Format bf16 = ctx.flip ? describe<c10::Half>("bf16*") : describe<c10::BFloat16>("bf16");
  r.note("dtypes: fp32, fp16, bf16 (both 16-bit types are shown; --dtype does not change this lab)");
  if (ctx.flip) r.note("--flip: the bf16 column (bf16*) uses fp16 instead, so bf16's wide exponent is absent");

  r.section("The formats, from std::numeric_limits");
  auto& formats = r.table("", {"format", "max", "min normal", "min subnormal", "epsilon", "binades"});
  for (const Format* f : {&fp32, &fp16, &bf16})
    formats.row({f->name, lab::sci(f->max), lab::sci(f->min_normal), lab::sci(f->min_subnormal), lab::sci(f->epsilon),
                 lab::num(f->binades(), 3)});

  r.section("Bit layouts, measured from tensors' bit patterns on " + ctx.device.str());
  const Layout l32 = layout_of(torch::kFloat, ctx.device), l16 = layout_of(torch::kHalf, ctx.device),
               lwide = layout_of(wide, ctx.device);
  auto& layouts = r.table("", {"format", "bits", "sign", "exponent", "mantissa", "pi: sign exponent mantissa"});
  const std::pair<const Format*, const Layout*> shown[] = {{&fp32, &l32}, {&fp16, &l16}, {&bf16, &lwide}};
  for (const auto& [f, l] : shown)
    layouts.row({f->name, std::to_string(l->bits), "1", std::to_string(l->exponent), std::to_string(l->mantissa), l->pi});
  // Random fp32 values already representable in the wide format: is its pattern the top half of fp32's?
  const auto samples = (torch::randn({kPatternSamples}, torch::device(ctx.device)) *
                        torch::exp2(torch::randint(-60, 60, {kPatternSamples}, torch::device(ctx.device))))
                           .to(wide).to(torch::kFloat);
  const auto p32 = bits_of(samples, torch::kFloat), pwide = bits_of(samples, wide);
  int64_t top_half = 0;
  for (size_t i = 0; i < p32.size(); ++i) top_half += (p32[i] >> 16) == pwide[i] && (p32[i] & 0xFFFFu) == 0;
  r.observe("bf16_top_half_share", bf16.name + " patterns equal to the top 16 bits of fp32's",
            100.0 * top_half / kPatternSamples, "%");
  r.observe("fp16_max", "fp16 largest finite value", fp16.max, "", lab::num(fp16.max, 6));
  r.observe("bf16_max", "bf16 largest finite value", bf16.max, "", lab::sci(bf16.max));
  r.observe("fp16_min_subnormal", "fp16 smallest subnormal (2^-24)", fp16.min_subnormal, "", lab::sci(fp16.min_subnormal));
  r.observe("bf16_min_normal", "bf16 smallest normal", bf16.min_normal, "", lab::sci(bf16.min_normal));
  r.observe("fp16_mantissa_bits", "fp16 mantissa bits, measured (" + bf16.name + ": " + std::to_string(lwide.mantissa) + ")",
            l16.mantissa);
  r.observe("bf16_mantissa_bits", bf16.name + " mantissa bits, measured", lwide.mantissa);
  r.observe("bf16_exponent_bits", bf16.name + " exponent bits, measured (fp16: " + std::to_string(l16.exponent) +
            ", fp32: " + std::to_string(l32.exponent) + ")", lwide.exponent);
  r.observe("bf16_epsilon", "bf16 epsilon (fp16: " + lab::sci(fp16.epsilon) + ")", bf16.epsilon, "",
            lab::sci(bf16.epsilon));

  const std::vector<float> values{kBig, kTiny, kHalfSub, kAboveHalfSub, kOnePlus};
  const auto in16 = round_trip(values, torch::kHalf, ctx.device);
  const auto inwide = round_trip(values, wide, ctx.device);
  auto& trips = r.table("Round-trips through tensor casts on " + ctx.device.str() + ": fp32 -> 16-bit -> fp32", {"fp32 value", "as fp16", "as " + bf16.name, "what it shows"});
  const char* why[] = {"above fp16's max", "below 2^-25", "2^-25, half of fp16's 2^-24", "1.125 x 2^-25",
                       "needs 8 mantissa bits"};
  for (size_t i = 0; i < values.size(); ++i)
    trips.row({show(values[i]), show(in16[i]), show(inwide[i]), why[i]});
  r.observe("big_as_bf16", "70000 stored as bf16 reads back as", inwide[0], "", show(inwide[0]));
  r.observe("tiny_as_bf16", "1e-8 stored as bf16 reads back as", inwide[1], "", show(inwide[1]));
  r.observe("half_sub_as_fp16", "2^-25 stored as fp16 reads back as", in16[2], "", show(in16[2]));
  r.observe("above_half_sub_as_fp16", "1.125 x 2^-25 stored as fp16 reads back as", in16[3], "", show(in16[3]));
  r.observe("one_plus_as_fp16", "1 + 2^-8 stored as fp16 reads back as", in16[4], "", lab::num(in16[4], 8));
  // Same range as fp32 "to bf16 precision": within one bf16 epsilon (2^-7) relative.
  const double tol = std::numeric_limits<c10::BFloat16>::epsilon();
  const double max_ratio = bf16.max / fp32.max, min_ratio = bf16.min_normal / fp32.min_normal;
  r.check("bf16's max and smallest normal equal fp32's, to bf16 precision (relative gap <= 2^-7)",
          std::abs(max_ratio - 1) <= tol && std::abs(min_ratio - 1) <= tol,
          "max " + lab::sci(bf16.max) + " vs " + lab::sci(fp32.max) + ", min normal " + lab::sci(bf16.min_normal) +
              " vs " + lab::sci(fp32.min_normal) + " (fp16: " + lab::sci(fp16.max) + ", " + lab::sci(fp16.min_normal) + ")");
  r.check("bf16 is the top half of an fp32: 16 bits, with fp32's sign and 8 exponent bits and 7 of its 23 mantissa "
          "bits (every pattern measured matches)",
          top_half == kPatternSamples && lwide.bits == 16 && lwide.exponent == l32.exponent && l16.bits == 16,
          bf16.name + ": " + std::to_string(top_half) + " of " + std::to_string(kPatternSamples) +
              " patterns are fp32's top 16 bits; measured layouts (sign/exponent/mantissa): fp32 1/" +
              std::to_string(l32.exponent) + "/" + std::to_string(l32.mantissa) + ", fp16 1/" + std::to_string(l16.exponent) +
              "/" + std::to_string(l16.mantissa) + ", " + bf16.name + " 1/" + std::to_string(lwide.exponent) + "/" +
              std::to_string(lwide.mantissa));
  r.check("70000 overflows to inf in fp16 and stays finite in bf16", std::isinf(in16[0]) && std::isfinite(inwide[0]),
          "fp16 " + show(in16[0]) + ", " + bf16.name + " " + show(inwide[0]));
  r.check("1e-8 and 2^-25 underflow to 0 in fp16 (1.125 x 2^-25 rounds up to 2^-24) and stay nonzero in bf16",
          in16[1] == 0 && in16[2] == 0 && in16[3] == 0x1p-24f && inwide[1] != 0 && inwide[2] != 0,
          "fp16 " + show(in16[1]) + ", " + show(in16[2]) + ", " + show(in16[3]) + "; " + bf16.name + " " +
              show(inwide[1]) + ", " + show(inwide[2]));
  r.check("1 + 2^-8 is lost in bf16 (7 mantissa bits) and kept in fp16 (10)", inwide[4] == 1.0f && in16[4] == kOnePlus,
          "fp16 " + lab::num(in16[4], 8) + ", " + bf16.name + " " + lab::num(inwide[4], 8));
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
