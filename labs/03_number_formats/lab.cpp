// Lab 03: bf16 against fp16, what the two 16-bit formats trade (quiz question 3). The AMP code is in
// amp.cpp.
//
// Both formats have 16 bits. bf16 spends 8 of them on the exponent, as fp32 does, so it has fp32's range
// (max about 3.4e38, smallest normal about 1.2e-38); fp16 has 5, so it tops out at 65504 and its smallest
// subnormal is 2^-24: 2^-25 (a tie) rounds to 0. The price: bf16 keeps 7 mantissa bits to fp16's 10.
// What autocast does to each value it casts is a tensor cast, tensor.to(kHalf) or .to(kBFloat16); the
// lab measures those casts:
// 1. the formats' limits from std::numeric_limits (no hand-typed constants);
// 2. each format's sign/exponent/mantissa layout, measured from real bit patterns of tensors (the field
//    widths from the patterns of 1, 2 and -1), and pi's bits in each;
// 3. round trips fp32 -> 16-bit -> fp32 through tensor casts on the device;
// 4. (after the answer) how fp32 becomes bf16: for a value bf16 holds, its pattern is the top half of
//    fp32's; any other value is rounded to the nearest bf16, ties to even (not truncated), measured on
//    random fp32 bit patterns and on two ties.
// This lab shows both 16-bit formats side by side, so it refuses --dtype.
//
// Run:  build/bin/lab03_number_formats [--device cpu|cuda] [--quick] [--seed N] [--json]
// bf16's range against fp32's (numeric_limits of both) and its layout as fp32's top half (the patterns of
// values already in bf16) hold by construction of the format, so the lab shows them, it does not check them.
// --flip: the "bf16" column is computed with fp16 instead (the wide exponent is removed), so every check
//         fails: bf16-rounds-to-nearest-even, fp16-overflows-bf16-not, fp16-underflows-bf16-not and
//         bf16-loses-8th-bit.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "lab/libtorch.h"
#include "lab/registry.h"

namespace {

using lab03::bits_of;
using lab03::round_trip;

// Values to round-trip, each chosen to sit just past one format's limit.
constexpr float kBig = 70000.0f;              // above fp16's max 65504, far below bf16's max
constexpr float kTiny = 1e-8f;                // below half of fp16's smallest subnormal 2^-24
constexpr float kHalfSub = 0x1p-25f;          // exactly half of 2^-24: a tie, rounds to even (0)
constexpr float kAboveHalfSub = 0x1.2p-25f;   // just above it: rounds up to 2^-24
constexpr float kOnePlus = 1.0f + 0x1p-8f;    // 1 + 2^-8: needs 8 mantissa bits, bf16 has 7 (a bf16 tie)
constexpr float kTieUp = 1.0f + 3 * 0x1p-8f;  // halfway between bf16's 1 + 2^-7 (odd) and 1 + 2^-6 (even)
constexpr int64_t kPatternSamples = 4096;     // random values whose bf16 patterns are compared
constexpr double kNotTruncatedMin = 0.25;     // nearest-even differs from truncation for >= 25% of them

// ---- measure -----------------------------------------------------------------------------------------

// Two ways to make a bf16 pattern from an fp32 one, in integer arithmetic: keep the top 16 bits, or round to
// the nearest bf16 with ties to even (c10/util/BFloat16.h's round_to_nearest_even, for values not NaN).
uint32_t truncated_bf16(uint32_t fp32) {
  return fp32 >> 16;
}
uint32_t nearest_even_bf16(uint32_t fp32) {
  return (fp32 + 0x7FFFu + ((fp32 >> 16) & 1u)) >> 16;
}

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

// Field widths measured from patterns: -1 and 1 differ only in the sign (the top bit); 1 and 2 differ
// only in the exponent field, whose lowest bit sits just above the mantissa.
struct Layout {
  int bits, exponent, mantissa;
  std::string pi;
};

Layout layout_of(torch::ScalarType dtype, torch::Device device) {
  const auto p =
      bits_of(torch::tensor({1.0f, 2.0f, -1.0f, std::numbers::pi_v<float>}, torch::device(device)), dtype);
  const int bits = std::bit_width(p[0] ^ p[2]), mantissa = std::countr_zero(p[0] ^ p[1]);
  std::string pi;
  for (int b = bits - 1; b >= 0; --b) {
    pi += ((p[3] >> b) & 1) ? '1' : '0';
    if (b == bits - 1 || b == mantissa) pi += ' ';
  }
  return {bits, bits - 1 - mantissa, mantissa, pi};
}

struct Result {
  lab::Context ctx;
  Format fp32, fp16, bf16;  // bf16: the wide format's (--flip: fp16's, named bf16*)
  Layout l32, l16, lwide;
  int64_t top_half = 0;                     // representable values whose wide pattern is fp32's top half
  int64_t samples = 0;                      // random finite fp32 patterns converted
  int64_t nearest_even = 0;                 // ... whose converted pattern is the nearest-even bf16
  int64_t not_truncated = 0;                // ... whose converted pattern is not fp32's top 16 bits
  std::vector<float> values, in16, inwide;  // the round trips
};

// Random fp32 values that the wide format holds exactly: is the wide pattern the top half of fp32's?
int64_t count_top_half(torch::ScalarType wide, torch::Device device) {
  const auto samples = (torch::randn({kPatternSamples}, torch::device(device)) *
                        torch::exp2(torch::randint(-60, 60, {kPatternSamples}, torch::device(device))))
                           .to(wide)
                           .to(torch::kFloat);
  const auto p32 = bits_of(samples, torch::kFloat), pwide = bits_of(samples, wide);
  int64_t n = 0;
  for (size_t i = 0; i < p32.size(); ++i) n += (p32[i] >> 16) == pwide[i] && (p32[i] & 0xFFFFu) == 0;
  return n;
}

// Random finite fp32 bit patterns (every exponent, subnormals included) cast to the wide format on the
// device: how many came out as the nearest-even bf16, and how many differ from the truncated top half.
void count_rounding(Result& m, torch::ScalarType wide) {
  auto raw = torch::randint(0, int64_t{1} << 32, {kPatternSamples}, torch::kInt64);
  raw = raw.masked_select(raw.bitwise_right_shift(23).bitwise_and(0xFF) !=
                          0xFF);  // drop inf and NaN (exponent all ones)
  const auto values = raw.to(torch::kInt32).view(torch::kFloat).to(m.ctx.device);
  const auto p32 = bits_of(values, torch::kFloat), pwide = bits_of(values, wide);
  m.samples = static_cast<int64_t>(p32.size());
  for (size_t i = 0; i < p32.size(); ++i) {
    m.nearest_even += pwide[i] == nearest_even_bf16(p32[i]);
    m.not_truncated += pwide[i] != truncated_bf16(p32[i]);
  }
}

Result measure(const lab::Context& ctx) {
  // --flip: the column labelled bf16 is really fp16 again, the exponent bits it would add are gone.
  const torch::ScalarType wide = ctx.flip ? torch::kHalf : torch::kBFloat16;
  Result m{.ctx = ctx,
           .fp32 = describe<float>("fp32"),
           .fp16 = describe<c10::Half>("fp16"),
           .bf16 = ctx.flip ? describe<c10::Half>("bf16*") : describe<c10::BFloat16>("bf16")};
  m.l32 = layout_of(torch::kFloat, ctx.device);
  m.l16 = layout_of(torch::kHalf, ctx.device);
  m.lwide = layout_of(wide, ctx.device);
  m.top_half = count_top_half(wide, ctx.device);
  count_rounding(m, wide);
  m.values = {kBig, kTiny, kHalfSub, kAboveHalfSub, kOnePlus, kTieUp};
  m.in16 = round_trip(m.values, torch::kHalf, ctx.device);
  m.inwide = round_trip(m.values, wide, ctx.device);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

std::string show(double v) {
  return std::isinf(v) ? "inf" : (v == 0 ? "0" : lab::num(v, 6));
}

void report_measured(const Result& m, lab::Report& r) {
  r.dtypes("fp16 and bf16", "fp32, fp16, bf16 side by side (--dtype does not change this lab)");
  if (m.ctx.flip)
    r.note("FLIP: the bf16 column (bf16*) uses fp16 instead, so bf16's 8 exponent bits are absent");

  r.section("The formats, from std::numeric_limits");
  auto& formats = r.table("", {"format", "max", "min normal", "min subnormal", "epsilon", "binades"});
  for (const Format* f : {&m.fp32, &m.fp16, &m.bf16})
    formats.row({f->name, lab::sci(f->max), lab::sci(f->min_normal), lab::sci(f->min_subnormal),
                 lab::sci(f->epsilon), lab::num(f->binades(), 3)});

  r.section("Bit layouts, measured from tensors' bit patterns on " + m.ctx.device.str());
  auto& layouts =
      r.table("", {"format", "bits", "sign", "exponent", "mantissa", "pi: sign exponent mantissa"});
  const std::pair<const Format*, const Layout*> shown[] = {
      {&m.fp32, &m.l32}, {&m.fp16, &m.l16}, {&m.bf16, &m.lwide}};
  for (const auto& [f, l] : shown)
    layouts.row({f->name, std::to_string(l->bits), "1", std::to_string(l->exponent),
                 std::to_string(l->mantissa), l->pi});

  r.section("Round trips through tensor casts on " + m.ctx.device.str() + ": fp32 -> 16-bit -> fp32");
  auto& trips = r.table("", {"fp32 value", "as fp16", "as " + m.bf16.name, "what it shows"});
  const char* why[] = {"above fp16's max", "below 2^-25", "2^-25, half of fp16's 2^-24", "1.125 x 2^-25",
                       "1 + 2^-8: 8 mantissa bits"};
  for (size_t i = 0; i < 5; ++i) trips.row({show(m.values[i]), show(m.in16[i]), show(m.inwide[i]), why[i]});
}

void report_limits(const Result& m, lab::Report& r) {
  const std::string bf = m.bf16.name;
  r.detail_section("The numbers the explanation quotes");
  r.observe("fp16_max", "fp16 largest finite value", m.fp16.max, "", lab::num(m.fp16.max, 6));
  r.observe("bf16_max", bf + " largest finite value", m.bf16.max, "", lab::sci(m.bf16.max));
  r.observe("fp16_min_subnormal", "fp16 smallest subnormal", m.fp16.min_subnormal, "",
            lab::sci(m.fp16.min_subnormal));
  r.observe("bf16_min_normal", bf + " smallest normal", m.bf16.min_normal, "", lab::sci(m.bf16.min_normal));
  r.observe("bf16_epsilon", bf + " epsilon", m.bf16.epsilon, "", lab::sci(m.bf16.epsilon));
  r.observe("fp16_total_bits", "fp16 bits, measured", m.l16.bits);
  r.observe("bf16_total_bits", bf + " bits, measured", m.lwide.bits);
  r.observe("fp16_exponent_bits", "fp16 exponent bits, measured", m.l16.exponent);
  r.observe("bf16_exponent_bits", fmt::format("{} exponent bits, measured (fp32: {})", bf, m.l32.exponent),
            m.lwide.exponent);
  r.observe("fp16_mantissa_bits", "fp16 mantissa bits, measured", m.l16.mantissa);
  r.observe("bf16_mantissa_bits", bf + " mantissa bits, measured", m.lwide.mantissa);
  r.observe("big_as_fp16", "70000 stored as fp16 reads back as", m.in16[0], "", show(m.in16[0]));
  r.observe("big_as_bf16", "70000 stored as " + bf + " reads back as", m.inwide[0], "", show(m.inwide[0]));
  r.observe("tiny_as_fp16", "1e-8 stored as fp16 reads back as", m.in16[1], "", show(m.in16[1]));
  r.observe("tiny_as_bf16", "1e-8 stored as " + bf + " reads back as", m.inwide[1], "", show(m.inwide[1]));
  r.observe("half_sub_as_fp16", "2^-25 stored as fp16 reads back as", m.in16[2], "", show(m.in16[2]));
  r.observe("above_half_sub_as_fp16", "1.125 x 2^-25 stored as fp16 reads back as", m.in16[3], "",
            show(m.in16[3]));
  r.observe("one_plus_as_fp16", "1 + 2^-8 stored as fp16 reads back as", m.in16[4], "",
            lab::num(m.in16[4], 8));
  r.observe("one_plus_as_bf16", "1 + 2^-8 stored as " + bf + " reads back as", m.inwide[4], "",
            lab::num(m.inwide[4], 8));
}

void report_rounding(const Result& m, lab::Report& r) {
  const std::string bf = m.bf16.name;
  r.detail_section("How fp32 becomes " + bf + ": the top half, or rounded to the nearest (ties to even)");
  r.observe("bf16_top_half_share",
            fmt::format("{} values {} holds: pattern = fp32's top half", kPatternSamples, bf),
            100.0 * m.top_half / kPatternSamples, "%");
  r.observe("bf16_nearest_even_share", fmt::format("{} random fp32 values: cast = nearest even", m.samples),
            100.0 * m.nearest_even / m.samples, "%");
  r.observe("bf16_not_truncated_share", "... cast != fp32's top 16 bits (truncation)",
            100.0 * m.not_truncated / m.samples, "%");
  r.observe("tie_up_as_bf16", fmt::format("1 + 3 x 2^-8 (a tie) stored as {}", bf), m.inwide[5], "",
            lab::num(m.inwide[5], 8));
  r.note(fmt::format("1 + 2^-8 lies halfway between 1 and 1 + 2^-7 and went to {} (even); 1 + 3 x 2^-8 lies",
                     lab::num(m.inwide[4], 8)));
  r.note(fmt::format("halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even) and went to {}; truncation gives {}",
                     lab::num(m.inwide[5], 8), lab::num(1.0 + 0x1p-7, 8)));
}

void report_checks(const Result& m, lab::Report& r) {
  const std::string bf = m.bf16.name;
  const Format &fp32 = m.fp32, &fp16 = m.fp16, &bf16 = m.bf16;
  // Shown, not checked: numeric_limits<BFloat16> against numeric_limits<float>, and the patterns of values
  // already cast to bf16, agree by construction of the format; nothing the lab runs could make them fail.
  const double max_ratio = bf16.max / fp32.max, min_ratio = bf16.min_normal / fp32.min_normal;
  r.note(
      fmt::format("range, shown: {} max {} vs fp32 {} ({:.4f}x), min normal {} vs {} ({:.4f}x); fp16: {}, {}",
                  bf, lab::sci(bf16.max), lab::sci(fp32.max), max_ratio, lab::sci(bf16.min_normal),
                  lab::sci(fp32.min_normal), min_ratio, lab::sci(fp16.max), lab::sci(fp16.min_normal)));
  const Layout &l32 = m.l32, &l16 = m.l16, &lw = m.lwide;
  r.note(
      fmt::format("layout, shown: {} of {} {} patterns are fp32's top 16 bits; sign/exponent/mantissa: "
                  "fp32 1/{}/{}, fp16 1/{}/{}, {} 1/{}/{}",
                  m.top_half, kPatternSamples, bf, l32.exponent, l32.mantissa, l16.exponent, l16.mantissa, bf,
                  lw.exponent, lw.mantissa));
  const double not_truncated = static_cast<double>(m.not_truncated) / m.samples;
  const bool ties = m.inwide[4] == 1.0f && m.inwide[5] == 1.0f + 0x1p-6f;
  r.check(
      "bf16-rounds-to-nearest-even",
      fmt::format(
          "an fp32 value bf16 cannot hold is rounded to the nearest bf16, ties to even, not truncated "
          "(>= {} of random values differ from truncation)",
          lab::percent(kNotTruncatedMin, 0)),
      m.nearest_even == m.samples && not_truncated >= kNotTruncatedMin && ties,
      fmt::format(
          "{}: {} of {} casts are the nearest-even bf16, {} differ from truncation; ties: 1 + 2^-8 -> {}, "
          "1 + 3 x 2^-8 -> {}",
          bf, m.nearest_even, m.samples, lab::percent(not_truncated), lab::num(m.inwide[4], 8),
          lab::num(m.inwide[5], 8)));
  r.check("fp16-overflows-bf16-not", "70000 overflows to inf in fp16 and stays finite in bf16",
          std::isinf(m.in16[0]) && std::isfinite(m.inwide[0]),
          fmt::format("fp16 {}, {} {}", show(m.in16[0]), bf, show(m.inwide[0])));
  r.check("fp16-underflows-bf16-not",
          "1e-8 and 2^-25 become 0 in fp16 (1.125 x 2^-25 rounds up to 2^-24) and stay nonzero in bf16",
          m.in16[1] == 0 && m.in16[2] == 0 && m.in16[3] == 0x1p-24f && m.inwide[1] != 0 && m.inwide[2] != 0,
          fmt::format("fp16 {}, {}, {}; {} {}, {}", show(m.in16[1]), show(m.in16[2]), show(m.in16[3]), bf,
                      show(m.inwide[1]), show(m.inwide[2])));
  r.check("bf16-loses-8th-bit", "1 + 2^-8 is lost in bf16 (7 mantissa bits) and kept in fp16 (10)",
          m.inwide[4] == 1.0f && m.in16[4] == kOnePlus,
          fmt::format("fp16 {}, {} {}", lab::num(m.in16[4], 8), bf, lab::num(m.inwide[4], 8)));
  r.takeaway(
      "bf16 trades mantissa bits for exponent bits: fp32's range in 16 bits, and coarser rounding than fp16");
}

void report(const Result& m, lab::Report& r) {
  report_measured(m, r);
  report_limits(m, r);
  report_rounding(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
