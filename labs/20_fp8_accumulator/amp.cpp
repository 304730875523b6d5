// Lab 20's AMP code: an FP8 GEMM whose partial sums are promoted to FP32. An FP8 tensor core adds its
// products in an accumulator that keeps about 14 significant bits (lab.cpp's model): over a long K the sum
// outgrows the products and their low bits are cut off. DeepSeek-V3 (arXiv 2412.19437, section 3.3) lets
// the tensor core add 128 products, then adds that partial sum to an FP32 total outside it; an H100's
// cuBLAS does the same without fast accumulation. lab.cpp measures it against one chain over K and
// against float64. Exercise 20 has you write it (amp-lab exercise 20).
#include "amp.h"

#include <algorithm>

namespace lab20 {

torch::Tensor promoted_gemm(const TensorCore& tensor_core, const torch::Tensor& a, const torch::Tensor& b) {
  const int64_t k = a.size(1), interval = kPromotionInterval;
  // The FP32 total, from +0: registers outside the tensor core.
  torch::Tensor total = torch::zeros({a.size(0), b.size(0)}, a.options().dtype(torch::kFloat));
  for (int64_t k0 = 0; k0 < k; k0 += interval) {
    const int64_t k1 = std::min(k0 + interval, k);
    // Each partial sum starts from zero in the tensor core: 128 products never outgrow its 14 bits much.
    const torch::Tensor partial = tensor_core.chain(a.slice(/*dim=*/1, k0, k1), b.slice(/*dim=*/1, k0, k1));
    total = total + partial;  // promoted: an FP32 add, rounding to nearest, in K order
  }
  return total;
}

}  // namespace lab20
