// Exercise 18: the E8M0 scale of an MX block. This is lab 18's amp.cpp with the scale taken out.
//
// Write e8m0_block_scale(blocks, element_max): for each block (a row of the last dimension of `blocks`,
// 32 values), the scale the block's values are divided by before they are rounded to the element format
// (E4M3: largest value 448; E2M1: 6). An MX scale is stored as E8M0, an 8-bit exponent: it must be a power
// of two 2^e, e an integer in [-127, 127]. The OCP spec's rule, 2^(floor(log2(amax)) - emax) with emax the
// element format's largest power of two, can leave amax / scale above element_max: those values saturate
// (are clamped to element_max). Yours must keep every value of the block within element_max, and waste no
// more than one power of two of the element's range doing so: what must hold is
//   |x| / scale <= element_max for every x of the block, and scale at most twice the smallest such power
//   of two;
// a block of zeros (a dead channel) must still get an E8M0 scale, so that it dequantizes to zeros.
//
// What the lab (labs/18_mx_blocks/lab.cpp) measures on your scale: on 4096 Gaussian and 4096 heavy-tailed
// blocks, in E4M3 and E2M1, the share of values that saturate (it must be 0), whether every scale is an
// E8M0 power of two, its largest ratio to the tightest power of two, and a block of zeros. Its float64
// quantizer does the rest; its activations and training runs use the library (amp::mx_fake_quantize,
// amp::mx_linear) and are context.
//
//   amp-lab check 18    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 18    the same on every save, until every check holds
#include "amp.h"

#include <cmath>

namespace lab18 {

torch::Tensor e8m0_block_scale(const torch::Tensor& blocks, double element_max) {
  const torch::Tensor amax = blocks.abs().amax(/*dim=*/-1, /*keepdim=*/true);
  // TODO: the power of two for each block, as described above. A placeholder: NaN, no scale yet.
  return torch::full_like(amax, std::nan(""));
}

}  // namespace lab18
