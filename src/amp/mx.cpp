#include "amp/mx.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include "amp/detail/fp4.h"

namespace amp {
namespace {

using detail::e2m1_codes_to_f32;
using detail::f32_to_e2m1_codes;
using detail::pack_nibbles;
using detail::unpack_nibbles;

constexpr int kF32MantissaBits = 23;
constexpr int kF32ExponentBias = 127;
constexpr int64_t kE8m0Bias = 127;
constexpr int64_t kE8m0Nan = 0xFF;  // the spec's NaN scale
constexpr int64_t kE8m0Inf = 0xFE;  // RCeil's scale of an infinite amax (torchao's _to_mx_rceil)
// fp32's smallest normal, 2^-126: the least divisor Floor, Ceil and Even use (torchao's F32_MIN_NORMAL).
constexpr double kF32MinNormal = 1.1754943508222875e-38;

// What the quantizer needs of an element format.
struct ElementFormat {
  int mantissa_bits;
  int max_pow2;    // the exponent of the largest power of two it holds: emax
  double max_pos;  // its largest finite value
};

ElementFormat format_of(torch::ScalarType element) {
  switch (element) {
    case torch::kFloat8_e4m3fn:
      return {3, 8, 448.0};
    case torch::kFloat8_e5m2:
      return {2, 15, 57344.0};
    default:  // kFloat4_e2m1fn_x2, checked by the callers
      return {1, 2, 6.0};
  }
}

bool is_element_format(torch::ScalarType t) {
  return t == torch::kFloat8_e4m3fn || t == torch::kFloat8_e5m2 || t == torch::kFloat4_e2m1fn_x2;
}

template <typename T>
std::string str(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Ceil(log2(amax / max_pos)) as the scale byte, and the elements x times the scale's reciprocal:
// torchao's _to_mx_rceil without the Blackwell instruction (its eager path on every device).
std::pair<torch::Tensor, torch::Tensor> rceil(const torch::Tensor& blocks, const torch::Tensor& amax,
                                              const ElementFormat& f) {
  const torch::Tensor descale = amax / f.max_pos;
  const torch::Tensor normal =
      (torch::ceil(torch::log2(descale)).clamp(-kE8m0Bias, kE8m0Bias) + kE8m0Bias).to(torch::kByte);
  const torch::Tensor exponent =
      torch::where(torch::isnan(descale), torch::full_like(normal, kE8m0Nan),
                   torch::where(torch::isinf(descale), torch::full_like(normal, kE8m0Inf), normal));
  // NaN stays NaN, inf divides by 2^127, the byte 0 leaves the values as they are.
  const torch::Tensor reciprocal =
      torch::where(exponent.eq(kE8m0Nan), descale,
                   torch::where(exponent.eq(kE8m0Inf), torch::full_like(descale, std::ldexp(1.0, -127)),
                                torch::where(exponent.eq(0), torch::ones_like(descale),
                                             torch::exp2(kE8m0Bias - exponent.to(torch::kFloat)))));
  return {exponent, (blocks * reciprocal).clamp(-f.max_pos, f.max_pos)};
}

// Floor, Ceil and Even from amax's fp32 bits, and the elements x divided by the scale: torchao's to_mx.
std::pair<torch::Tensor, torch::Tensor> from_exponent_bits(const torch::Tensor& blocks, torch::Tensor amax,
                                                           const ElementFormat& f, MxScaleMode mode,
                                                           bool clamp_elements) {
  const torch::Tensor nan = torch::isnan(amax);
  if (mode == MxScaleMode::Even) {
    // amax rounded to the element's mantissa width, half away from zero, before its exponent is read.
    const int32_t half_ulp = 1 << (kF32MantissaBits - f.mantissa_bits - 1);
    const int32_t sign_and_exponent = static_cast<int32_t>(0xFF800000u);
    const torch::Tensor rounded =
        (amax.view(torch::kInt) + half_ulp).bitwise_and(sign_and_exponent).view(torch::kFloat);
    amax = torch::where(nan, amax, rounded);
  }
  const torch::Tensor bits = amax.view(torch::kInt);
  torch::Tensor pow2 = bits.bitwise_right_shift(kF32MantissaBits).bitwise_and(0xFF) - kF32ExponentBias;
  if (mode == MxScaleMode::Ceil) pow2 = pow2 + bits.bitwise_and(0x7FFFFF).gt(0).to(torch::kInt);
  // Clamped to E8M0's exponents; one more above, where a NaN or inf amax lands.
  const torch::Tensor unbiased = (pow2 - f.max_pow2).clamp(-kE8m0Bias, kE8m0Bias + 1);
  const torch::Tensor biased =
      torch::where(nan, torch::full_like(unbiased, kE8m0Nan), unbiased + kE8m0Bias).to(torch::kByte);
  const torch::Tensor scale = biased.to(torch::kInt)
                                  .bitwise_left_shift(kF32MantissaBits)
                                  .view(torch::kFloat)
                                  .clamp_min(kF32MinNormal);
  torch::Tensor elements = blocks / scale;
  if (clamp_elements) elements = elements.clamp(-f.max_pos, f.max_pos);
  return {biased, elements};
}

}  // namespace

MxTensor mx_quantize(const torch::Tensor& x, torch::ScalarType element, int64_t block_size,
                     MxScaleMode mode) {
  constexpr const char* kWhere = "mx_quantize";
  if (!x.defined()) throw MxError(kWhere, "x is an undefined tensor");
  const auto dtype = x.scalar_type();
  if (dtype != torch::kFloat && dtype != torch::kBFloat16 && dtype != torch::kHalf)
    throw MxError(kWhere, "x must be fp32, bf16 or fp16, got " + str(dtype));
  if (!is_element_format(element))
    throw MxError(kWhere,
                  "element must be Float8_e4m3fn, Float8_e5m2 or Float4_e2m1fn_x2, got " + str(element));
  if (x.dim() == 0) throw MxError(kWhere, "x must have at least one dimension, got a 0-dimensional tensor");
  const bool fp4 = element == torch::kFloat4_e2m1fn_x2;
  if (block_size < 1 || (fp4 && block_size % 2 != 0))
    throw MxError(kWhere, "block_size must be " + std::string(fp4 ? "even and positive" : "positive") +
                              ", got " + std::to_string(block_size));
  const int64_t last = x.size(-1);
  if (last % block_size != 0)
    throw MxError(kWhere, "the last dimension (" + std::to_string(last) +
                              ") must be a multiple of block_size (" + std::to_string(block_size) + ")");
  torch::NoGradGuard no_grad;
  const ElementFormat f = format_of(element);
  std::vector<int64_t> block_shape = x.sizes().vec();
  block_shape.back() = last / block_size;
  block_shape.push_back(block_size);
  const torch::Tensor blocks = x.detach().contiguous().view(block_shape).to(torch::kFloat);
  const torch::Tensor amax = blocks.abs().amax(/*dim=*/-1, /*keepdim=*/true);
  // torchao clamps FP8 elements before the cast (an FP8 cast of a finite value above the maximum did not
  // saturate before torch 2.12); FP4's conversion saturates by itself.
  auto [scale_bytes, scaled] = mode == MxScaleMode::RCeil
                                   ? rceil(blocks, amax, f)
                                   : from_exponent_bits(blocks, amax, f, mode, /*clamp_elements=*/!fp4);
  MxTensor q;
  q.element = element;
  q.block_size = block_size;
  q.scales = scale_bytes.squeeze(-1).view(torch::kFloat8_e8m0fnu);
  const torch::Tensor flat = scaled.view(x.sizes());
  q.elements = fp4 ? pack_nibbles(f32_to_e2m1_codes(flat)) : flat.to(element);
  return q;
}

torch::Tensor mx_dequantize(const MxTensor& q, torch::ScalarType out) {
  constexpr const char* kWhere = "mx_dequantize";
  if (!q.scales.defined() || !q.elements.defined())
    throw MxError(kWhere, "q's scales or elements are undefined");
  if (!is_element_format(q.element))
    throw MxError(kWhere,
                  "q.element must be Float8_e4m3fn, Float8_e5m2 or Float4_e2m1fn_x2, got " + str(q.element));
  if (out != torch::kFloat && out != torch::kBFloat16 && out != torch::kHalf)
    throw MxError(kWhere, "out must be fp32, bf16 or fp16, got " + str(out));
  const bool fp4 = q.element == torch::kFloat4_e2m1fn_x2;
  const auto stored = fp4 ? torch::kByte : q.element;
  if (q.elements.scalar_type() != stored)
    throw MxError(kWhere, "q.elements must be " + str(stored) + " for " + str(q.element) + ", got " +
                              str(q.elements.scalar_type()));
  const auto scale_type = q.scales.scalar_type();
  if (scale_type != torch::kFloat8_e8m0fnu && scale_type != torch::kByte)
    throw MxError(kWhere, "q.scales must be Float8_e8m0fnu or Byte, got " + str(scale_type));
  if (q.elements.dim() == 0 || q.block_size < 1)
    throw MxError(kWhere, "q.elements must have a dimension and q.block_size be positive");
  std::vector<int64_t> shape = q.elements.sizes().vec();
  if (fp4) shape.back() *= 2;
  std::vector<int64_t> scale_shape = shape;
  scale_shape.back() /= q.block_size;
  if (shape.back() % q.block_size != 0 || q.scales.sizes().vec() != scale_shape)
    throw MxError(kWhere, "q.scales' shape " + str(q.scales.sizes()) + " does not hold one scale per " +
                              std::to_string(q.block_size) + " elements of " +
                              str(torch::IntArrayRef(shape)));
  torch::NoGradGuard no_grad;
  const torch::Tensor values =
      fp4 ? e2m1_codes_to_f32(unpack_nibbles(q.elements)).to(out) : q.elements.contiguous().to(out);
  // 2^(byte - 127) in fp32 (2^-127 is an fp32 subnormal), NaN for 0xFF, then in `out`: torchao's
  // get_fp_scale.
  const torch::Tensor bytes = q.scales.contiguous().view(torch::kByte);
  const torch::Tensor offset = bytes.to(torch::kShort) - kE8m0Bias;
  torch::Tensor scale = torch::pow(torch::full_like(offset, 2.0, torch::kFloat), offset);
  scale = torch::where(bytes.ne(kE8m0Nan), scale, torch::full_like(scale, std::nan("")));
  return (values.reshape({-1, q.block_size}) * scale.reshape({-1, 1}).to(out)).view(shape);
}

torch::Tensor mx_fake_quantize(const torch::Tensor& x, torch::ScalarType element, int64_t block_size,
                               MxScaleMode mode) {
  const MxTensor q = mx_quantize(x, element, block_size, mode);
  return mx_dequantize(q, x.scalar_type());
}

namespace {

// The saved options, as ctx->saved_data holds them.
void save_options(torch::autograd::AutogradContext* ctx, const MxMatmulOptions& o) {
  ctx->saved_data["element"] = static_cast<int64_t>(o.element);
  ctx->saved_data["grad_element"] = static_cast<int64_t>(o.grad_element);
  ctx->saved_data["block_size"] = o.block_size;
  ctx->saved_data["mode"] = static_cast<int64_t>(o.mode);
}

MxMatmulOptions saved_options(torch::autograd::AutogradContext* ctx) {
  MxMatmulOptions o;
  o.element = static_cast<torch::ScalarType>(ctx->saved_data["element"].toInt());
  o.grad_element = static_cast<torch::ScalarType>(ctx->saved_data["grad_element"].toInt());
  o.block_size = ctx->saved_data["block_size"].toInt();
  o.mode = static_cast<MxScaleMode>(ctx->saved_data["mode"].toInt());
  return o;
}

// Each GEMM's inputs quantized along the dimension it sums over: the last dimension of the left operand
// and of the right operand's transpose.
struct MxMatmulFunction : torch::autograd::Function<MxMatmulFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b, const MxMatmulOptions& o) {
    ctx->save_for_backward({a, b});
    save_options(ctx, o);
    const torch::Tensor qa = mx_fake_quantize(a, o.element, o.block_size, o.mode);
    const torch::Tensor qbt = mx_fake_quantize(b.t(), o.element, o.block_size, o.mode);  // [N, K]
    return torch::matmul(qa, qbt.t());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &b = saved[1];
    const MxMatmulOptions o = saved_options(ctx);
    const torch::Tensor g = grads[0].to(a.scalar_type());  // [M, N]
    torch::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) {
      const torch::Tensor qg = mx_fake_quantize(g, o.grad_element, o.block_size, o.mode);  // along N
      const torch::Tensor qb = mx_fake_quantize(b, o.grad_element, o.block_size, o.mode);  // [K, N] along N
      grad_a = torch::matmul(qg, qb.t());
    }
    if (ctx->needs_input_grad(1)) {
      const torch::Tensor qat = mx_fake_quantize(a.t(), o.grad_element, o.block_size, o.mode);  // [K, M]
      const torch::Tensor qgt = mx_fake_quantize(g.t(), o.grad_element, o.block_size, o.mode);  // [N, M]
      grad_b = torch::matmul(qat, qgt.t());
    }
    return {grad_a, grad_b, torch::Tensor()};
  }
};

void check_operand(const char* where, const char* name, const torch::Tensor& t) {
  if (!t.defined()) throw MxError(where, std::string(name) + " is an undefined tensor");
  if (t.dim() != 2) throw MxError(where, std::string(name) + " must be 2-D, got " + str(t.sizes()));
  const auto dtype = t.scalar_type();
  if (dtype != torch::kFloat && dtype != torch::kBFloat16 && dtype != torch::kHalf)
    throw MxError(where, std::string(name) + " must be fp32, bf16 or fp16, got " + str(dtype));
}

void check_multiple(const char* where, const char* what, int64_t size, int64_t block_size) {
  if (block_size < 1 || size % block_size != 0)
    throw MxError(where, std::string(what) + " (" + std::to_string(size) +
                             ") must be a multiple of block_size (" + std::to_string(block_size) + ")");
}

}  // namespace

torch::Tensor mx_matmul(const torch::Tensor& a, const torch::Tensor& b, const MxMatmulOptions& options) {
  constexpr const char* kWhere = "mx_matmul";
  check_operand(kWhere, "a", a);
  check_operand(kWhere, "b", b);
  if (a.scalar_type() != b.scalar_type())
    throw MxError(
        kWhere, "a and b must have one dtype, got " + str(a.scalar_type()) + " and " + str(b.scalar_type()));
  if (a.size(1) != b.size(0))
    throw MxError(kWhere, "a " + str(a.sizes()) + " and b " + str(b.sizes()) + " do not multiply");
  check_multiple(kWhere, "M, a's rows", a.size(0), options.block_size);
  check_multiple(kWhere, "K, a's columns", a.size(1), options.block_size);
  check_multiple(kWhere, "N, b's columns", b.size(1), options.block_size);
  for (const auto e : {options.element, options.grad_element}) {
    if (!is_element_format(e))
      throw MxError(kWhere, "elements must be Float8_e4m3fn, Float8_e5m2 or Float4_e2m1fn_x2, got " + str(e));
    if (e == torch::kFloat4_e2m1fn_x2 && options.block_size % 2 != 0)
      throw MxError(
          kWhere, "block_size must be even for Float4_e2m1fn_x2, got " + std::to_string(options.block_size));
  }
  return MxMatmulFunction::apply(a, b, options);
}

torch::Tensor mx_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                        const MxMatmulOptions& options) {
  constexpr const char* kWhere = "mx_linear";
  if (!input.defined() || input.dim() < 1) throw MxError(kWhere, "input must be a tensor of dimension >= 1");
  check_operand(kWhere, "weight", weight);
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0)))
    throw MxError(kWhere, "bias must be [" + std::to_string(weight.size(0)) + "], got " + str(bias.sizes()));
  std::vector<int64_t> out_shape = input.sizes().vec();
  out_shape.back() = weight.size(0);
  const torch::Tensor out = mx_matmul(input.reshape({-1, input.size(-1)}), weight.t(), options);
  return (bias.defined() ? out + bias : out).view(out_shape);
}

}  // namespace amp
