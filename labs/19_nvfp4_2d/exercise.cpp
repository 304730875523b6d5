// Exercise 19: NVFP4's two-level scale. This is lab 19's amp.cpp with the scales taken out.
//
// Write nvfp4_scales(x): the FP32 scale of the whole tensor, and for each block of 16 values along the last
// dimension its scale relative to it. NVFP4 stores a value as an E2M1 element (largest value 6) times its
// block's scale, an E4M3 byte (largest 448, normals down to 2^-6), times the tensor's FP32 scale. E4M3 alone
// covers about 15 binades around 1: a tensor of tiny values (gradients) would have block scales below its
// normals, a tensor of huge ones scales past 448; the FP32 level moves the block scales onto E4M3's range.
// What must hold:
//   - the per-tensor scale puts the largest block scale of the tensor at E4M3's largest value 448, with that
//     block's largest magnitude at E2M1's largest value 6;
//   - each block scale, in units of the per-tensor scale, maps its block's largest magnitude onto 6 as
//     nearly as an E4M3 value can, and is a value an E4M3 byte holds (the format stores nothing else);
//   - a tensor of zeros (a dead layer's gradient) and a block of zeros (a dead channel) get finite, positive
//     scales, so that they dequantize to zeros and not to 0 / 0.
//
// What the lab (labs/19_nvfp4_2d/lab.cpp) measures on your scales: the per-tensor scale against its float64
// value on three tensors (Gaussian, Student-t, blocks over 13 binades), whether every block scale is an
// E4M3 value and how far it is from its block's float64 amax / 6 in units of the per-tensor scale, each
// block's error on the 14-binade tensor, zeros, and NVFP4's SQNR with your scales against MXFP4's. Its
// weight, gradient and Hadamard runs use the library (amp::nvfp4_quantize) and are context.
//
//   amp-lab check 19    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 19    the same on every save, until every check holds
#include "amp.h"

#include <cmath>

namespace lab19 {

Nvfp4Scales nvfp4_scales(const torch::Tensor& x) {
  constexpr int64_t kBlock = 16;  // NVFP4's block
  const torch::Tensor amax = x.abs().amax();
  const torch::Tensor block_amax = x.unflatten(/*dim=*/-1, {-1, kBlock}).abs().amax(/*dim=*/-1);
  // TODO: the two scales, as described above. A placeholder: NaN, no scales yet.
  return {torch::full_like(amax, std::nan("")), torch::full_like(block_amax, std::nan(""))};
}

}  // namespace lab19
