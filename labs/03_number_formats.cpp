// Lab 03: bf16 vs fp16, what the two 16-bit formats trade.
//
// Backs quiz question 3 ("What advantage does bfloat16 have over FP16?"). Both formats have 16 bits;
// bf16 spends 8 of them on the exponent, like fp32, so it has fp32's range (max about 3.4e38, smallest
// normal about 1.2e-38), while fp16 tops out at 65504 and flushes values below about 6e-8 to zero.
// The price: bf16 keeps only 7 mantissa bits, so it rounds more coarsely than fp16 (10 bits).
//
// 1. A table of fp32, fp16 and bf16 read from std::numeric_limits (no hand-typed constants).
// 2. Round-trips of a few values through real tensor casts (fp32 -> 16-bit -> fp32) on the device.
// 3. Checks: bf16's range equals fp32's (to bf16 precision); both 16-bit formats use 16 bits; the
//    round-trips behave as claimed (70000 and 1e-8 survive only in bf16, 1 + 2^-8 only in fp16).
//
// This lab shows both 16-bit formats side by side, so --dtype does not change it.
//
// Run alone:  build/bin/lab03_number_formats [--device cpu|cuda] [--quick] [--flip]
// --flip: the "bf16" column is computed with fp16 instead (the wide exponent is removed), so the
//         range checks and the round-trip checks must FAIL.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "lab/registry.h"

namespace {

// Values to round-trip, each chosen to sit just past one format's limit.
constexpr float kBig = 70000.0f;                   // above fp16's max 65504, far below bf16's max
constexpr float kTiny = 1e-8f;                     // below half of fp16's smallest subnormal 2^-24
constexpr float kOnePlus = 1.0f + 1.0f / 256.0f;   // 1 + 2^-8: needs 8 mantissa bits, bf16 has 7

// The numbers numeric_limits knows about one format.
struct Format {
  std::string name;
  int bits, exponent_bits, mantissa_bits;
  double max, min_normal, min_subnormal, epsilon;
  double binades() const { return std::log2(max / min_subnormal); }  // powers of two it spans
};

template <typename T>
Format describe(std::string name) {
  using L = std::numeric_limits<T>;
  const int bits = static_cast<int>(sizeof(T) * 8);
  const int mantissa = L::digits - 1;  // digits counts the implicit leading 1
  return {std::move(name), bits, bits - 1 - mantissa, mantissa, static_cast<double>(static_cast<float>(L::max())),
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
  auto& formats = r.table("", {"format", "bits", "exp", "mantissa", "max", "min normal", "min subnormal",
                               "epsilon", "binades"});
  for (const Format* f : {&fp32, &fp16, &bf16})
    formats.row({f->name, std::to_string(f->bits), std::to_string(f->exponent_bits), std::to_string(f->mantissa_bits),
                 lab::sci(f->max), lab::sci(f->min_normal), lab::sci(f->min_subnormal), lab::sci(f->epsilon),
                 lab::num(f->binades(), 3)});
  r.observe("fp16_max", "fp16 largest finite value", fp16.max, "", lab::num(fp16.max, 6));
  r.observe("bf16_max", "bf16 largest finite value", bf16.max, "", lab::sci(bf16.max));
  r.observe("fp16_min_subnormal", "fp16 smallest subnormal (2^-24)", fp16.min_subnormal, "", lab::sci(fp16.min_subnormal));
  r.observe("bf16_min_normal", "bf16 smallest normal", bf16.min_normal, "", lab::sci(bf16.min_normal));
  r.observe("fp16_mantissa_bits", "fp16 mantissa bits (bf16: " + std::to_string(bf16.mantissa_bits) + ")",
            fp16.mantissa_bits);
  r.observe("bf16_mantissa_bits", "bf16 mantissa bits", bf16.mantissa_bits);
  r.observe("bf16_epsilon", "bf16 epsilon (fp16: " + lab::sci(fp16.epsilon) + ")", bf16.epsilon, "",
            lab::sci(bf16.epsilon));

  const std::vector<float> values{kBig, kTiny, kOnePlus};
  const auto in16 = round_trip(values, torch::kHalf, ctx.device);
  const auto inwide = round_trip(values, wide, ctx.device);
  auto& trips = r.table("Round-trips through tensor casts on " + ctx.device.str() + ": fp32 -> 16-bit -> fp32", {"fp32 value", "as fp16", "as " + bf16.name, "what it shows"});
  const char* why[] = {"above fp16's max", "below fp16's smallest subnormal", "needs 8 mantissa bits"};
  for (size_t i = 0; i < values.size(); ++i)
    trips.row({show(values[i]), show(in16[i]), show(inwide[i]), why[i]});
  r.observe("big_as_bf16", "70000 stored as bf16 reads back as", inwide[0], "", show(inwide[0]));
  r.observe("tiny_as_bf16", "1e-8 stored as bf16 reads back as", inwide[1], "", show(inwide[1]));
  r.observe("one_plus_as_fp16", "1 + 2^-8 stored as fp16 reads back as", in16[2], "", lab::num(in16[2], 8));

  r.section("Checks");
  // Same range as fp32 "to bf16 precision": within one bf16 epsilon (2^-7) relative.
  const double tol = std::numeric_limits<c10::BFloat16>::epsilon();
  const double max_ratio = bf16.max / fp32.max, min_ratio = bf16.min_normal / fp32.min_normal;
  r.check("bf16's max and smallest normal equal fp32's, to bf16 precision (relative gap <= 2^-7)",
          std::abs(max_ratio - 1) <= tol && std::abs(min_ratio - 1) <= tol,
          "max " + lab::sci(bf16.max) + " vs " + lab::sci(fp32.max) + ", min normal " + lab::sci(bf16.min_normal) +
              " vs " + lab::sci(fp32.min_normal) + " (fp16: " + lab::sci(fp16.max) + ", " + lab::sci(fp16.min_normal) + ")");
  r.check("both 16-bit formats use 16 bits: bf16 does not save bits, it moves them to the exponent",
          fp16.bits == 16 && bf16.bits == 16 && fp32.bits == 32,
          "sizeof*8: fp16 " + std::to_string(fp16.bits) + ", bf16 " + std::to_string(bf16.bits) + ", fp32 " +
              std::to_string(fp32.bits));
  r.check("70000 overflows to inf in fp16 and stays finite in bf16", std::isinf(in16[0]) && std::isfinite(inwide[0]),
          "fp16 " + show(in16[0]) + ", " + bf16.name + " " + show(inwide[0]));
  r.check("1e-8 underflows to 0 in fp16 and stays nonzero in bf16", in16[1] == 0 && inwide[1] != 0,
          "fp16 " + show(in16[1]) + ", " + bf16.name + " " + show(inwide[1]));
  r.check("1 + 2^-8 is lost in bf16 (7 mantissa bits) and kept in fp16 (10)", inwide[2] == 1.0f && in16[2] == kOnePlus,
          "fp16 " + lab::num(in16[2], 8) + ", " + bf16.name + " " + lab::num(inwide[2], 8));
  return r;
}

}  // namespace

AMP_LAB_REGISTER("number-formats", /*question=*/3, "bf16 vs fp16: range versus precision",
                 /*heading=*/"bf16 and fp16 side by side: limits, layouts and round trips", run,
                 /*provides=*/{"fp16_max", "bf16_max", "fp16_min_subnormal", "bf16_min_normal", "fp16_mantissa_bits",
                               "bf16_mantissa_bits", "bf16_epsilon", "big_as_bf16", "tiny_as_bf16", "one_plus_as_fp16"});
