#include "amp/nvfp4.h"

#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "amp/detail/fp4.h"
#include "amp/mx.h"

namespace amp {
// Helpers, in a namespace of their own (a unity build puts this file beside mx.cpp).
namespace nvfp4_impl {
namespace {

using detail::f32_to_e2m1_codes;
using detail::pack_nibbles;

constexpr double kE2m1Max = 6.0;             // FP4 E2M1's largest finite value (torchao's F4_E2M1_MAX)
constexpr double kE4m3Max = 448.0;           // FP8 E4M3's largest finite value (F8E4M3_MAX)
constexpr double kE4m3MinNormal = 0.015625;  // 2^-6, E4M3's smallest normal: torchao's E4M3_EPS (finfo.tiny)
constexpr int64_t kE8m0One = 127;            // the E8M0 byte of 2^0

template <typename T>
std::string str(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool is_input_dtype(torch::ScalarType t) {
  return t == torch::kFloat || t == torch::kBFloat16 || t == torch::kHalf;
}

// The value of an E2M1 magnitude code 0-7 (int64), in fp32, computed (no table to copy to the device):
// exponent field 0 is the subnormal 0 or 0.5, otherwise 2^(e - 1) x (1 + m / 2).
torch::Tensor e2m1_magnitude(const torch::Tensor& code) {
  const torch::Tensor e = code.bitwise_right_shift(1).to(torch::kFloat);
  const torch::Tensor m = code.bitwise_and(1).to(torch::kFloat);
  return torch::where(e.eq(0), m * 0.5, torch::exp2(e - 1) * (m * 0.5 + 1));
}

// fp32 in [-6, 6] -> E2M1 codes rounded stochastically: |v| between the grid neighbours lo < hi goes up
// with probability (|v| - lo) / (hi - lo), one uniform draw from `gen` per element. The nearest-even code
// finds the neighbours: magnitude codes 0-7 are in increasing order of value. NaN keeps its nearest code.
torch::Tensor e2m1_codes_stochastic(const torch::Tensor& v, const at::Generator& gen) {
  constexpr int64_t kSignBit = 8, kMaxMagnitudeCode = 7;
  const torch::Tensor nearest = f32_to_e2m1_codes(v);
  const torch::Tensor sign = nearest.bitwise_and(kSignBit);
  const torch::Tensor code = nearest.bitwise_and(kMaxMagnitudeCode).to(torch::kLong);
  const torch::Tensor mag = v.abs();
  const torch::Tensor above = e2m1_magnitude(code).gt(mag);  // the nearest value is hi, else lo
  const torch::Tensor lo_code = torch::where(above, (code - 1).clamp_min(0), code);
  const torch::Tensor hi_code = torch::where(above, code, (code + 1).clamp_max(kMaxMagnitudeCode));
  const torch::Tensor lo = e2m1_magnitude(lo_code), hi = e2m1_magnitude(hi_code);
  const torch::Tensor p = torch::where(hi.gt(lo), (mag - lo) / (hi - lo), torch::zeros_like(mag));
  const torch::Tensor up = torch::rand(v.sizes(), gen, v.options().dtype(torch::kFloat)).lt(p);
  const torch::Tensor chosen = torch::where(up, hi_code, lo_code).to(torch::kByte);
  // A NaN compares false everywhere: it keeps its nearest code.
  return torch::where(torch::isnan(v), nearest, chosen.bitwise_or(sign));
}

void check_per_tensor_scale(const char* fn, const torch::Tensor& g) {
  if (g.scalar_type() != torch::kFloat || g.numel() != 1)
    throw Nvfp4Error(fn, "the per-tensor scale must be one fp32 element, not " + str(g.scalar_type()) +
                             " of shape " + str(g.sizes()));
}

}  // namespace
}  // namespace nvfp4_impl

torch::Tensor nvfp4_per_tensor_scale(const torch::Tensor& amax) {
  if (!amax.defined()) throw Nvfp4Error("nvfp4_per_tensor_scale", "amax is undefined");
  if (!at::isFloatingType(amax.scalar_type()))
    throw Nvfp4Error("nvfp4_per_tensor_scale",
                     "amax must be a floating tensor, not " + nvfp4_impl::str(amax.scalar_type()));
  return amax.to(torch::kFloat) / (nvfp4_impl::kE4m3Max * nvfp4_impl::kE2m1Max);
}

Nvfp4Tensor nvfp4_quantize(const torch::Tensor& x, const torch::Tensor& per_tensor_scale,
                           const std::optional<at::Generator>& rounding) {
  if (!x.defined()) throw Nvfp4Error("nvfp4_quantize", "x is undefined");
  if (x.dim() == 0) throw Nvfp4Error("nvfp4_quantize", "x must have at least one dimension");
  if (!nvfp4_impl::is_input_dtype(x.scalar_type()))
    throw Nvfp4Error("nvfp4_quantize",
                     "x must be fp32, bf16 or fp16, not " + nvfp4_impl::str(x.scalar_type()));
  if (x.size(-1) % kNvfp4BlockSize != 0)
    throw Nvfp4Error("nvfp4_quantize", "the last dimension (" + nvfp4_impl::str(x.size(-1)) +
                                           ") must be a multiple of " + nvfp4_impl::str(kNvfp4BlockSize));
  if (rounding && !rounding->defined())
    throw Nvfp4Error("nvfp4_quantize", "the rounding generator is undefined");
  if (rounding && rounding->device() != x.device())
    throw Nvfp4Error("nvfp4_quantize", "the rounding generator is on " + nvfp4_impl::str(rounding->device()) +
                                           ", x on " + nvfp4_impl::str(x.device()));
  if (per_tensor_scale.defined()) {
    nvfp4_impl::check_per_tensor_scale("nvfp4_quantize", per_tensor_scale);
    if (per_tensor_scale.device() != x.device())
      throw Nvfp4Error("nvfp4_quantize", "the per-tensor scale is on " +
                                             nvfp4_impl::str(per_tensor_scale.device()) + ", x on " +
                                             nvfp4_impl::str(x.device()));
  }
  std::vector<int64_t> block_shape = x.sizes().vec();
  block_shape.back() /= kNvfp4BlockSize;
  block_shape.push_back(kNvfp4BlockSize);
  const torch::Tensor blocks = x.to(torch::kFloat).contiguous().view(block_shape);
  const torch::Tensor block_scale = blocks.abs().amax(/*dim=*/-1) / nvfp4_impl::kE2m1Max;
  Nvfp4Tensor q;
  torch::Tensor reciprocal;
  if (!per_tensor_scale.defined()) {
    q.scales = block_scale.clamp(nvfp4_impl::kE4m3MinNormal, nvfp4_impl::kE4m3Max).to(torch::kFloat8_e4m3fn);
    // x * (1 / s), not x / s: torchao's (and its Triton kernel's) numerics.
    reciprocal = q.scales.to(torch::kFloat).reciprocal();
  } else {
    const torch::Tensor g = per_tensor_scale.reshape({});
    q.scales =
        (block_scale / g).clamp(nvfp4_impl::kE4m3MinNormal, nvfp4_impl::kE4m3Max).to(torch::kFloat8_e4m3fn);
    reciprocal = g.reciprocal() / q.scales.to(torch::kFloat);
    q.per_tensor_scale = g;
  }
  const torch::Tensor scaled =
      (blocks * reciprocal.unsqueeze(-1)).clamp(-nvfp4_impl::kE2m1Max, nvfp4_impl::kE2m1Max).view(x.sizes());
  const torch::Tensor codes =
      rounding ? nvfp4_impl::e2m1_codes_stochastic(scaled, *rounding) : nvfp4_impl::f32_to_e2m1_codes(scaled);
  q.elements = nvfp4_impl::pack_nibbles(codes);
  return q;
}

torch::Tensor nvfp4_dequantize(const Nvfp4Tensor& q, torch::ScalarType out) {
  if (!q.scales.defined() || !q.elements.defined())
    throw Nvfp4Error("nvfp4_dequantize", "the scales or the elements are undefined");
  if (q.scales.scalar_type() != torch::kFloat8_e4m3fn)
    throw Nvfp4Error("nvfp4_dequantize",
                     "the scales must be Float8_e4m3fn, not " + nvfp4_impl::str(q.scales.scalar_type()));
  if (q.elements.scalar_type() != torch::kByte)
    throw Nvfp4Error("nvfp4_dequantize",
                     "the elements must be uint8, not " + nvfp4_impl::str(q.elements.scalar_type()));
  if (q.elements.dim() == 0 || q.elements.dim() != q.scales.dim() ||
      q.elements.sizes().slice(0, q.elements.dim() - 1) != q.scales.sizes().slice(0, q.scales.dim() - 1) ||
      q.elements.size(-1) * 2 != q.scales.size(-1) * kNvfp4BlockSize)
    throw Nvfp4Error("nvfp4_dequantize", "elements of shape " + nvfp4_impl::str(q.elements.sizes()) +
                                             " do not match scales of shape " +
                                             nvfp4_impl::str(q.scales.sizes()) + " (8 bytes a scale)");
  if (q.per_tensor_scale.defined())
    nvfp4_impl::check_per_tensor_scale("nvfp4_dequantize", q.per_tensor_scale);
  if (!nvfp4_impl::is_input_dtype(out))
    throw Nvfp4Error("nvfp4_dequantize", "out must be fp32, bf16 or fp16, not " + nvfp4_impl::str(out));
  // The E2M1 values themselves: mx_dequantize's decoding under the E8M0 scale 2^0, exact in fp32.
  const MxTensor unit{
      torch::full(q.scales.sizes(), nvfp4_impl::kE8m0One, q.scales.options().dtype(torch::kByte))
          .view(torch::kFloat8_e8m0fnu),
      q.elements, torch::kFloat4_e2m1fn_x2, kNvfp4BlockSize};
  const torch::Tensor values = mx_dequantize(unit, torch::kFloat);
  std::vector<int64_t> block_shape = values.sizes().vec();
  block_shape.back() /= kNvfp4BlockSize;
  block_shape.push_back(kNvfp4BlockSize);
  torch::Tensor scale = q.scales.to(torch::kFloat);
  if (q.per_tensor_scale.defined()) scale = q.per_tensor_scale.reshape({}) * scale;
  return (values.view(block_shape) * scale.unsqueeze(-1)).view(values.sizes()).to(out);
}

}  // namespace amp
