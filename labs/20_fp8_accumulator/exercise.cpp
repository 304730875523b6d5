// Exercise 20: the promoted accumulation of an FP8 GEMM. This is lab 20's amp.cpp with the promotion taken
// out of promoted_gemm().
//
// Write promoted_gemm(tensor_core, a, b): a [M, K] x b [N, K]^T in E4M3, accumulated as an H100's cuBLAS
// does without fast accumulation and as DeepSeek-V3's FP8 GEMMs do. tensor_core.chain(a', b') adds the
// products of a' and b' from zero in the tensor core's accumulator, which keeps about 14 bits: over a long K
// the sum grows until the products' low bits no longer fit, and its error grows with K. Yours must let the
// tensor core add only kPromotionInterval (128) products at a time, in K order, each run starting from zero,
// and add each of those partial sums to a total kept in FP32 (an FP32 add, rounding to nearest), in K
// order; it returns that total, fp32 [M, N].
//
// What the lab (labs/20_fp8_accumulator/lab.cpp) measures on your promoted_gemm: for K = 512 to 16384 the
// largest relative error of the scaled outputs against the float64 product of the same E4M3 values (it must
// stay below 0.3% at every K, and be at most a tenth of one chain's at the longest K), and whether every
// output equals, bit for bit, the lab's own promotion (chains of 128 from zero, each added to an FP32 total
// in K order). Its one chain and its FP32 accumulator are context: they show what you are to fix.
//
//   amp-lab check 20    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 20    the same on every save, until every check holds
#include "amp.h"

#include <algorithm>

namespace lab20 {

torch::Tensor promoted_gemm(const TensorCore& tensor_core, const torch::Tensor& a, const torch::Tensor& b) {
  // TODO: partial sums of kPromotionInterval products in the tensor core, each added to an FP32 total, as
  //       described above. As written: one chain over the whole K, the tensor core's accumulator alone.
  return tensor_core.chain(a, b);
}

}  // namespace lab20
