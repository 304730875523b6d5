// Lab 19's AMP code: NVFP4's two-level scale. An E4M3 block scale spans 2^-9 .. 448 (normals from 2^-6), far
// less than an fp32 tensor's range, so NVFP4 puts an FP32 scale per tensor above the block scales: the
// tensor's amax / (448 x 6), which maps the largest block scale onto E4M3's largest value 448 and that
// block's largest value onto E2M1's largest 6. Each block's scale is then its own amax / 6 in units of the
// per-tensor scale, rounded to E4M3 (Transformer Engine's NVFP4BlockScaling; torchao's nvfp4_quantize with
// per_tensor_amax_to_scale; arXiv 2509.25149). lab.cpp quantizes tensors with it and checks it in float64.
// Exercise 19 has you write it (amp-lab exercise 19).
#include "amp.h"

namespace lab19 {

Nvfp4Scales nvfp4_scales(const torch::Tensor& x) {
  constexpr double kE2m1Max = 6;               // FP4 E2M1's largest value
  constexpr double kE4m3Max = 448;             // FP8 E4M3's largest value
  constexpr double kE4m3MinNormal = 1.0 / 64;  // 2^-6, E4M3's smallest normal
  constexpr int64_t kBlock = 16;               // NVFP4's block
  const torch::Tensor amax = x.abs().amax();
  // A tensor of zeros has amax 0: any positive per-tensor scale will do, as its blocks are zeros.
  const torch::Tensor per_tensor =
      torch::where(amax > 0, amax / (kE4m3Max * kE2m1Max), torch::ones_like(amax));
  const torch::Tensor block_amax = x.unflatten(/*dim=*/-1, {-1, kBlock}).abs().amax(/*dim=*/-1);
  // amax / 6 in units of the per-tensor scale, kept within E4M3's normals (a block of zeros gets 2^-6, not
  // 0), rounded to the nearest E4M3 value.
  const torch::Tensor block = (block_amax / kE2m1Max / per_tensor)
                                  .clamp(kE4m3MinNormal, kE4m3Max)
                                  .to(torch::kFloat8_e4m3fn)
                                  .to(torch::kFloat);
  return {per_tensor, block};
}

}  // namespace lab19
