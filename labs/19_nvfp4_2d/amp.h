// Lab 19's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <torch/types.h>

namespace lab19 {

// The two levels of an NVFP4 tensor's scale: a value of block b stands for element x per_tensor x block[b].
struct Nvfp4Scales {
  torch::Tensor per_tensor;  // fp32, one element: the FP32 scale every block scale is relative to
  torch::Tensor block;  // fp32 [..., n / 16]: each block's scale relative to per_tensor, a value E4M3 holds
};

// The two-level scale of x (fp32 [..., n], n a multiple of 16; blocks of 16 along the last dimension): with
// it, every value of x divided by per_tensor x its block's scale lies within E2M1's largest value 6 (up to
// the E4M3 rounding of the block scale), the block holding x's largest magnitude gets E4M3's largest scale,
// and a tensor or block of zeros gets finite, positive scales.
Nvfp4Scales nvfp4_scales(const torch::Tensor& x);

}  // namespace lab19
