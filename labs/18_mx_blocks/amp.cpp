// Lab 18's AMP code: the E8M0 scale of an MX block, rounded so that the block's largest values fit the
// element format. The OCP MX spec (v1.0) takes 2^(floor(log2(amax)) - emax), emax the element format's
// largest power of two: amax / scale is then in [2^emax, 2^(emax+1)), and above the element's largest value
// (E4M3: 448 = 1.75 x 2^8; E2M1: 6 = 1.5 x 2^2) it saturates. Rounding log2(amax / element_max) up, as
// cuBLAS and Transformer Engine do (torchao's RCEIL), keeps amax / scale <= element_max. lab.cpp quantizes
// Gaussian and heavy-tailed blocks with it and with the spec's rule. Exercise 18 has you write it
// (amp-lab exercise 18).
#include "amp.h"

namespace lab18 {

torch::Tensor e8m0_block_scale(const torch::Tensor& blocks, double element_max) {
  constexpr double kE8m0MaxExponent = 127;  // E8M0: 2^-127 .. 2^127 (the byte 0xFF is NaN)
  const torch::Tensor amax = blocks.abs().amax(/*dim=*/-1, /*keepdim=*/true);
  // The smallest power of two that brings amax within element_max: log2 rounded up. A block of zeros has
  // log2(0) = -inf, clamped to the smallest scale (its elements are 0 whatever the scale).
  const torch::Tensor exponent =
      torch::ceil(torch::log2(amax / element_max)).clamp(-kE8m0MaxExponent, kE8m0MaxExponent);
  return torch::exp2(exponent);
}

}  // namespace lab18
