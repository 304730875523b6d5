// NVFP4 (NVIDIA's 4-bit block format, Blackwell): a tensor's last dimension cut into blocks of 16 values,
// each block stored as one FP8 E4M3 scale and 16 FP4 E2M1 elements (two a byte, as amp/mx.h packs MXFP4),
// optionally under one FP32 per-tensor scale. A value is element x block scale (x per-tensor scale). Unlike
// MX's power-of-two E8M0 scale, the E4M3 scale carries 3 mantissa bits, so a block's largest magnitude maps
// close to E2M1's maximum 6. The C++ form of torchao 0.18.0's nvfp4_quantize, per_tensor_amax_to_scale and
// NVFP4Tensor.dequantize (torchao/prototype/mx_formats/nvfp4_tensor.py), bit for bit: the same scale bytes
// and element bytes (tests/test_nvfp4.cpp, against torchao's own output:
// tests/parity/torchao_nvfp4_trace.py).
//
//   amp::Nvfp4Tensor q = amp::nvfp4_quantize(x);                                   // block scales only
//   amp::Nvfp4Tensor t = amp::nvfp4_quantize(x, amp::nvfp4_per_tensor_scale(x.abs().amax()));  // two levels
//   torch::Tensor y = amp::nvfp4_dequantize(t);                                    // fp32, x's shape
//
// How a block is quantized, with amax its largest magnitude, all in fp32:
//   block scales only  s = E4M3(clamp(amax / 6, 2^-6, 448)); elements E2M1(clamp(x * (1 / s), -6, 6))
//   per-tensor scale g s = E4M3(clamp(amax / 6 / g, 2^-6, 448)); elements E2M1(clamp(x * ((1 / g) / s), -6,
//   6))
// where E4M3 and E2M1 round to nearest even. g = amax(|x|) / (448 x 6) lets the block scales use E4M3's
// whole range; without it a tensor whose block amaxes lie below 6 x 2^-6 (E4M3's smallest normal, the
// clamp) or above 6 x 448 is scaled badly: tiny blocks flush toward zero, huge ones saturate at 6 x 448.
// torchao's edge cases, kept as they are:
//   - a block of zeros gets the scale 2^-6 and zero elements (the sign of -0 kept);
//   - a NaN in a block makes its scale NaN (0x7F) and every element of the block NaN's code;
//   - an inf in a block (no NaN) gives the scale 448: the inf saturates to 6, the block's finite values
//     flush to zero (or round at 448 x E2M1's spacing);
//   - the per-tensor scale is used as given: 0, inf or NaN makes the block scales and elements follow IEEE
//     arithmetic (no check, which would need a host sync).
// 2D blocks (nvfp4_quantize_2d): one E4M3 scale per 16x16 tile of the last two dimensions, as Transformer
// Engine's NVFP4 recipe quantizes weights (NVFP4BlockScaling; its reference quantizer takes each tile's amax
// for the 16 row blocks of the tile). The result is an ordinary Nvfp4Tensor whose 16 row blocks of a tile
// hold the same scale, so nvfp4_dequantize and 1x16 consumers read it as it is. A tile's values are scaled
// alike whichever way it is cut, so the quantization of x's transpose is the transpose of x's, bit for bit;
// with 1x16 blocks it is not (the blocks of x's rows and of its columns have other amaxes). torchao 0.18.0
// has no 2D NVFP4 blocks: tests/test_nvfp4.cpp holds them to a float64 reference written there, and to
// torchao's 1D bytes where every row block of a tile holds the tile's amax (the two then agree).
// Syncs: none. Only torch ops (amax, bit views, shifts, where, casts), so the same code runs on the CPU and
// on CUDA; no value is read back to the host. Misuse throws Nvfp4Error before anything is computed.
// Not here: the random Hadamard transform Transformer Engine applies before quantizing some tensors (lab 19
// writes its own, labs/19_nvfp4_2d/lab.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "amp/error.h"

namespace amp {

// An argument an nvfp4 function refuses, named with what it was
// ("amp::nvfp4_quantize: the last dimension (40) must be a multiple of 16").
struct Nvfp4Error : Error {
  using Error::Error;
};

// NVFP4's block size: 16 values share a scale.
inline constexpr int64_t kNvfp4BlockSize = 16;

// A tensor in NVFP4, as torchao's nvfp4_quantize returns it (with its per-tensor scale).
struct Nvfp4Tensor {
  // One E4M3 scale per block, torch::kFloat8_e4m3fn: the input's shape with the last dimension divided by
  // 16. With a per-tensor scale, the block scale divided by it.
  torch::Tensor scales;
  // torch::kUInt8 bytes of two E2M1 codes each, the even-indexed element in the low nibble and the next one
  // in the high nibble (torchao's pack_uint4), the input's shape with the last dimension halved.
  torch::Tensor elements;
  // The FP32 per-tensor scale the block scales are relative to (one element), or undefined when none.
  torch::Tensor per_tensor_scale;
};

// torchao's per_tensor_amax_to_scale: amax (any floating dtype, converted to fp32) / (448 x 6), the
// per-tensor scale with which the tensor's largest block scale comes out at E4M3's maximum 448.
// Syncs: none. Throws Nvfp4Error when amax is undefined or not a floating tensor.
torch::Tensor nvfp4_per_tensor_scale(const torch::Tensor& amax);

// x quantized to NVFP4 blocks of 16 along its last dimension. x: fp32, bf16 or fp16 (converted to fp32
// first, exactly), at least 1-D, its last dimension a multiple of 16, on any device, any layout.
// per_tensor_scale: undefined (block scales only), or a one-element fp32 tensor on x's device (as from
// nvfp4_per_tensor_scale). Syncs: none. Throws Nvfp4Error when x is undefined, 0-dimensional, not
// fp32/bf16/fp16 or its last dimension is not a multiple of 16, or when per_tensor_scale is defined but not
// a one-element fp32 tensor on x's device, or when the generator is undefined or on another device than x.
// rounding: std::nullopt rounds the elements to nearest even (torchao's nvfp4_quantize, bit for bit); a
// generator (on x's device) rounds them stochastically instead: x / scale between two E2M1 neighbours lo < hi
// becomes hi with probability (x / scale - lo) / (hi - lo), one torch::rand draw per element, so that the
// dequantized value is x in expectation (up to the clamp at 6; the scales stay round-to-nearest).
Nvfp4Tensor nvfp4_quantize(const torch::Tensor& x, const torch::Tensor& per_tensor_scale = {},
                           const std::optional<at::Generator>& rounding = std::nullopt);

// x quantized to NVFP4 with one E4M3 scale per 16x16 tile of its last two dimensions, given to each of the
// tile's 16 row blocks (`scales` has nvfp4_quantize's shape, each value repeated over 16 rows); the elements
// are quantized as nvfp4_quantize's, from that scale. Everything else (per_tensor_scale, rounding, dtypes,
// devices, edge cases) as nvfp4_quantize. Syncs: none. Throws Nvfp4Error as nvfp4_quantize does, and when x
// has fewer than two dimensions or its second-to-last dimension is not a multiple of 16.
Nvfp4Tensor nvfp4_quantize_2d(const torch::Tensor& x, const torch::Tensor& per_tensor_scale = {},
                              const std::optional<at::Generator>& rounding = std::nullopt);

// The values q holds, in `out` (kFloat, kBFloat16 or kHalf), in the shape q was quantized from: each element
// times its block's scale (times the per-tensor scale: per-tensor x block scale first, as torchao's
// get_hp_scales), computed in fp32 and then cast to `out`, as torchao's NVFP4Tensor.dequantize.
// Syncs: none. Throws Nvfp4Error when q's scales or elements are undefined or of the wrong dtype, their
// shapes do not match, its per-tensor scale is not one fp32 element, or out is not one of the three.
torch::Tensor nvfp4_dequantize(const Nvfp4Tensor& q, torch::ScalarType out = torch::kFloat);

}  // namespace amp
