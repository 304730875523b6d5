// FP4 E2M1 codes, for the block formats (amp/mx.cpp's MXFP4, amp/nvfp4.cpp's NVFP4): torchao's
// conversions op for op, so that both formats agree with torchao bit for bit. Torch ops only, no host sync.
#pragma once

#include <ATen/core/Tensor.h>

namespace amp::detail {

// fp32 -> E2M1 codes in the low 4 bits of a uint8, round to nearest even, saturating at 6 (no inf or NaN
// codes; a NaN gets whatever its bits make): torchao's _f32_to_floatx_unpacked(x, 2, 1).
at::Tensor f32_to_e2m1_codes(const at::Tensor& x);
// E2M1 codes (low 4 bits of a uint8) -> fp32: torchao's _floatx_unpacked_to_f32(x, 2, 1).
at::Tensor e2m1_codes_to_f32(const at::Tensor& codes);
// Two E2M1 codes a byte along the last dimension, the even-indexed one low (torchao's pack_uint4), and back
// (unpack_uint4).
at::Tensor pack_nibbles(const at::Tensor& codes);
at::Tensor unpack_nibbles(const at::Tensor& packed);

}  // namespace amp::detail
