// MX block formats (OCP Microscaling Formats v1.0, 2023): a tensor's last dimension cut into blocks of
// block_size values (32 in the spec), each block stored as one shared power-of-two scale (E8M0: 8 exponent
// bits, bias 127, 0xFF is NaN) and block_size elements in a narrow float format: FP8 E4M3 or E5M2 (MXFP8),
// FP4 E2M1 (MXFP4, 4.25 bits a value). A value is element x 2^(scale byte - 127). The C++ form of torchao
// 0.18.0's to_mx / to_dtype (torchao/prototype/mx_formats/mx_tensor.py), bit for bit: the same scale bytes
// and element bytes for every mode, element format and block size (tests/test_mx.cpp, against torchao's
// own output: tests/parity/torchao_mx_trace.py).
//
//   amp::MxTensor q = amp::mx_quantize(x, torch::kFloat8_e4m3fn);     // blocks of 32, the spec's scale
//   torch::Tensor y = amp::mx_dequantize(q);                          // fp32, x's shape
//
// The scale of a block follows from its largest magnitude amax and the element format's largest power of
// two emax (E4M3 8, E5M2 15, E2M1 2), as torchao's ScaleCalculationMode computes it:
//   Floor  2^(floor(log2(amax)) - emax): the spec's rule. amax / scale lies in [2^emax, 2^(emax+1)), above
//          the element's maximum (E4M3 448 and E5M2 57344: 1.75 x 2^emax; E2M1 6: 1.5 x 2^emax) when
//          amax's mantissa exceeds 1.75 (1.5): such values saturate to the maximum.
//   Ceil   the exponent of amax rounded up when amax is not a power of two: nothing saturates.
//   Even   amax first rounded to the element format's mantissa width (ties away), then Floor.
//   RCeil  2^ceil(log2(amax / element max)) (cuBLAS's and Transformer Engine's MXFP8 rule); the elements
//          are x times the reciprocal of the scale, not x divided by it.
// torchao's edge cases, kept as they are:
//   - a block of zeros, or whose scale would be below 2^-127, gets the scale byte 0 (2^-127); Floor, Ceil
//     and Even then divide by 2^-126 (fp32's smallest normal) and RCeil leaves the values unscaled, so
//     mx_dequantize (which multiplies by 2^-127) is off by 2x (RCeil: by 2^-127) for such blocks;
//   - a NaN in a block makes its scale byte 0xFF (NaN): every element of the block dequantizes to NaN;
//   - an inf in a block (no NaN) gives the scale of amax = inf (Floor: 2^(128 - emax); RCeil: 0xFE); the
//     inf saturates to the element's maximum and the block's finite values flush to zero;
//   - elements are clamped to the element format's largest finite value, then cast (round to nearest even).
// Syncs: none. Only torch ops (amax, bit views, shifts, where, casts), so the same code runs on the CPU and
// on CUDA; no value is read back to the host. Misuse throws MxError before anything is computed.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "amp/error.h"

namespace amp {

// An argument mx_quantize or mx_dequantize refuses, named with what it was
// ("mx_quantize: the last dimension (40) must be a multiple of block_size (32)").
struct MxError : Error {
  using Error::Error;
};

// How a block's E8M0 scale is chosen from its largest magnitude: torchao's ScaleCalculationMode (FLOOR,
// CEIL, EVEN, RCEIL). See above.
enum class MxScaleMode { Floor, Ceil, Even, RCeil };

// A tensor in an MX format, as torchao's to_mx returns it.
struct MxTensor {
  // One E8M0 scale per block, torch::kFloat8_e8m0fnu (view it as torch::kUInt8 for the biased exponent
  // bytes): the input's shape with the last dimension divided by block_size.
  torch::Tensor scales;
  // The elements: for kFloat8_e4m3fn / kFloat8_e5m2 a tensor of that dtype in the input's shape; for
  // kFloat4_e2m1fn_x2 torch::kUInt8 bytes of two E2M1 codes each, the even-indexed element in the low
  // nibble and the next one in the high nibble (torchao's pack_uint4), the last dimension halved.
  torch::Tensor elements;
  // The element format: kFloat8_e4m3fn, kFloat8_e5m2 or kFloat4_e2m1fn_x2.
  torch::ScalarType element = torch::kFloat8_e4m3fn;
  int64_t block_size = 32;
};

// x quantized to MX blocks of block_size along its last dimension. x: fp32, bf16 or fp16 (converted to
// fp32 first, exactly), on any device, any layout; element: kFloat8_e4m3fn, kFloat8_e5m2 or
// kFloat4_e2m1fn_x2 (MXFP4); block_size >= 1 (even for MXFP4) and dividing x's last dimension.
// Syncs: none. Throws MxError when x is undefined, a 0-dimensional tensor or not fp32/bf16/fp16, element is
// another dtype, or block_size does not fit.
MxTensor mx_quantize(const torch::Tensor& x, torch::ScalarType element, int64_t block_size = 32,
                     MxScaleMode mode = MxScaleMode::Floor);

// The values q holds, in `out` (kFloat, kBFloat16 or kHalf), in the shape q was quantized from: each element
// times its block's scale, computed in `out` as torchao's to_dtype does (a scale byte 0xFF gives NaN).
// Syncs: none. Throws MxError when q's scales or elements are undefined, its element format is not one of
// mx_quantize's, its shapes do not match block_size, or out is not a floating type it supports.
torch::Tensor mx_dequantize(const MxTensor& q, torch::ScalarType out = torch::kFloat);

// x quantized to MX blocks along its last dimension and dequantized back, in x's dtype (fp32, bf16 or fp16):
// mx_dequantize(mx_quantize(x, element, block_size, mode), x's dtype). No gradient flows through it.
// Syncs: none. Throws MxError as mx_quantize does.
torch::Tensor mx_fake_quantize(const torch::Tensor& x, torch::ScalarType element, int64_t block_size = 32,
                               MxScaleMode mode = MxScaleMode::Floor);

// How mx_matmul and mx_linear quantize: the forward matmul's inputs to `element`, the backward matmuls'
// inputs (the output gradient, and the saved input and weight) to `grad_element`, each in blocks of
// block_size along the dimension the matmul sums over (as MX hardware needs them, and as torchao's
// emulated MX training does: torchao 0.18.0's mx_mm, torchao/prototype/moe_training/mxfp8_linear.py).
struct MxMatmulOptions {
  torch::ScalarType element = torch::kFloat8_e4m3fn;
  torch::ScalarType grad_element = torch::kFloat8_e4m3fn;
  int64_t block_size = 32;
  MxScaleMode mode = MxScaleMode::Floor;
};

// a [M, K] x b [K, N] with MX fake quantization, differentiable in a and b (training without MX hardware:
// every GEMM sees only values an MX format holds, computed in a's dtype):
//   forward  out    = fq(a, along K) x fq(b^T, along K)^T
//   backward grad_a = fq(grad_out, along N) x fq(b, along N)^T
//            grad_b = fq(a^T, along M) x fq(grad_out^T, along M)^T
// where fq is mx_fake_quantize. a and b: 2-D, the same floating dtype (fp32, bf16 or fp16), the same device.
// Syncs: none (forward and backward). Throws MxError when a or b is undefined, not 2-D, of another dtype
// than the other or not fp32/bf16/fp16, when K does not match, or when M, K or N is not a multiple of
// block_size (each is a dimension some GEMM sums over); or as mx_quantize for the options' elements.
torch::Tensor mx_matmul(const torch::Tensor& a, const torch::Tensor& b, const MxMatmulOptions& options = {});

// torch::linear(input, weight, bias) with the matmul's inputs MX fake-quantized as mx_matmul's:
// input [..., K] (its leading dimensions' product a multiple of block_size), weight [N, K], bias [N] or
// undefined (added unquantized). Syncs: none. Throws MxError as mx_matmul, and when bias is not [N].
torch::Tensor mx_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                        const MxMatmulOptions& options = {});

}  // namespace amp
