#include "amp/detail/fp4.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <ATen/ATen.h>

namespace amp::detail {
namespace {

constexpr int kF32MantissaBits = 23;
constexpr int kF32ExponentBias = 127;

}  // namespace

// fp32 -> FP4 E2M1 codes in the low 4 bits of a uint8, round to nearest even, saturating at 6 (no inf or
// NaN codes; a NaN gets whatever its bits make): torchao's _f32_to_floatx_unpacked(x, 2, 1), op for op.
at::Tensor f32_to_e2m1_codes(const at::Tensor& x) {
  constexpr int kEbits = 2, kMbits = 1, kExpBias = 1;
  constexpr double kMaxNormal = 6.0, kMinNormal = 1.0;
  constexpr int kMagicAdder = (1 << (kF32MantissaBits - kMbits - 1)) - 1;
  // Adding 2^22 (exponent 127 - 1 + 23 - 1 + 1) to a magnitude below 1 rounds it to a multiple of 0.5 in
  // the mantissa's low bits: the subnormal codes 0, 1 and the smallest normal 2.
  constexpr int32_t kDenormExp = (kF32ExponentBias - kExpBias) + (kF32MantissaBits - kMbits) + 1;
  constexpr int32_t kDenormMaskInt = kDenormExp << kF32MantissaBits;
  constexpr double kDenormMaskFloat = 4194304.0;  // kDenormMaskInt read as fp32: 2^22
  const at::Tensor bits = x.view(at::kInt);
  const at::Tensor sign = bits.bitwise_and(std::numeric_limits<int32_t>::min());
  const at::Tensor mag = bits.bitwise_xor(sign).view(at::kFloat);
  const at::Tensor saturate = mag.ge(kMaxNormal);
  const at::Tensor denormal = saturate.logical_not().logical_and(mag.lt(kMinNormal));
  const at::Tensor normal = saturate.logical_or(denormal).logical_not();
  const at::Tensor denormal_x = (mag + kDenormMaskFloat).view(at::kInt).sub(kDenormMaskInt).to(at::kByte);
  const at::Tensor mag_bits = mag.view(at::kInt);
  const at::Tensor mant_odd = mag_bits.bitwise_right_shift(kF32MantissaBits - kMbits).bitwise_and(1);
  const int32_t val_to_add = ((kExpBias - kF32ExponentBias) << kF32MantissaBits) + kMagicAdder;
  const at::Tensor normal_x =
      (mag_bits + val_to_add + mant_odd).bitwise_right_shift(kF32MantissaBits - kMbits).to(at::kByte);
  constexpr int64_t kMaxCode = (1 << (kEbits + kMbits)) - 1;
  at::Tensor codes = at::full_like(mag, kMaxCode, at::kByte);
  codes = at::where(denormal, denormal_x, codes);
  codes = at::where(normal, normal_x, codes);
  constexpr int kSignShift = kF32MantissaBits + 8 - kMbits - kEbits;
  const at::Tensor sign_code =
      sign.bitwise_right_shift(kSignShift).to(at::kByte).bitwise_and(1 << (kEbits + kMbits));
  return codes.bitwise_or(sign_code);
}

// E2M1 codes (low 4 bits of a uint8) -> fp32: torchao's _floatx_unpacked_to_f32(x, 2, 1), its masked
// writes as where.
at::Tensor e2m1_codes_to_f32(const at::Tensor& codes) {
  constexpr int kEbits = 2, kMbits = 1, kExpBias = 1;
  const at::Tensor sign = codes.bitwise_and(1 << (kEbits + kMbits));
  const at::Tensor pos = codes.bitwise_xor(sign);
  const at::Tensor zero = pos.eq(0);
  const at::Tensor denormal = pos.gt(0).logical_and(pos.bitwise_right_shift(kMbits).eq(0));
  const at::Tensor exp_f32 = (pos.bitwise_right_shift(kMbits) - kExpBias + kF32ExponentBias)
                                 .to(at::kInt)
                                 .bitwise_left_shift(kF32MantissaBits);
  const at::Tensor mant_f32 =
      pos.bitwise_and((1 << kMbits) - 1).to(at::kInt).bitwise_left_shift(kF32MantissaBits - kMbits);
  at::Tensor result = exp_f32.bitwise_or(mant_f32);
  result = at::where(zero, at::zeros_like(result), result);
  // The one subnormal code, 0.5: fp32 exponent 126.
  constexpr int32_t kHalfBits = (1 - kExpBias + kF32ExponentBias - kMbits) << kF32MantissaBits;
  result = at::where(denormal, at::full_like(result, kHalfBits), result);
  const at::Tensor sign_f32 = sign.to(at::kInt).bitwise_left_shift(kF32MantissaBits - kMbits + 8 - kEbits);
  return result.bitwise_or(sign_f32).view(at::kFloat);
}

// Two E2M1 codes a byte, the even-indexed one low (torchao's pack_uint4), and back (unpack_uint4).
at::Tensor pack_nibbles(const at::Tensor& codes) {
  std::vector<int64_t> shape = codes.sizes().vec();
  shape.back() /= 2;
  const at::Tensor flat = codes.contiguous().view({-1});
  const int64_t n = flat.numel();
  const at::Tensor low = flat.slice(/*dim=*/0, /*start=*/0, /*end=*/n, /*step=*/2);
  const at::Tensor high = flat.slice(/*dim=*/0, /*start=*/1, /*end=*/n, /*step=*/2);
  return low.bitwise_or(high.bitwise_left_shift(4)).view(shape);
}

at::Tensor unpack_nibbles(const at::Tensor& packed) {
  std::vector<int64_t> shape = packed.sizes().vec();
  shape.back() *= 2;
  const at::Tensor bytes = packed.contiguous();
  return at::stack({bytes.bitwise_and(0x0F), bytes.bitwise_right_shift(4)}, /*dim=*/-1).view(shape);
}

}  // namespace amp::detail
