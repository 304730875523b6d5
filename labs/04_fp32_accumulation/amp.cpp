// Lab 04's AMP code: where a sum of fp16 products is accumulated. Running sums kept in fp16 or fp32, a
// blocked fp16 sum, and cuBLAS's two fp16 switches; lab.cpp runs them, and at::matmul, against float64.
#include "amp.h"

#include <ATen/Context.h>

namespace lab04 {

std::vector<torch::Tensor> running_sums(const torch::Tensor& products, torch::ScalarType acc,
                                        const std::vector<int64_t>& at) {
  torch::Tensor sum = torch::zeros({products.size(1)}, products.options().dtype(acc));
  std::vector<torch::Tensor> out;
  for (int64_t k = 1; k <= at.back(); ++k) {
    // add_ adds in fp32 and rounds the sum to `acc` when it stores it: one rounding per add in fp16. A
    // product of two fp16 values has at most 22 significant bits, exact in fp32.
    sum.add_(products[k - 1]);
    if (k == at[out.size()]) out.push_back(sum.clone());
  }
  return out;
}

// One plausible scheme for a kernel with an fp16 accumulator (the lab's model, not a documented kernel).
std::vector<torch::Tensor> blocked_fp16_sums(const torch::Tensor& products, int64_t block,
                                             const std::vector<int64_t>& at) {
  torch::Tensor partial = torch::zeros({products.size(1)}, products.options().dtype(torch::kHalf));
  torch::Tensor sum = torch::zeros_like(partial);
  std::vector<torch::Tensor> out;
  for (int64_t k = 1; k <= at.back(); ++k) {
    partial.add_(products[k - 1]);  // a short fp16 sum: its roundings stay small
    if (k % block == 0) {
      sum.add_(partial);  // K / block roundings of the large sum instead of K
      partial.zero_();
    }
    if (k == at[out.size()]) out.push_back(sum.clone());
  }
  return out;
}

CublasFp16Switches::CublasFp16Switches(bool reduced_precision_reduction, bool fp16_accumulation) {
  auto& g = at::globalContext();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
  const at::CuBLASReductionOption r = g.allowFP16ReductionCuBLAS();  // an enum since 2.10
  reduced_before_ = r == at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK;
  splitk_before_ = r != at::CuBLASReductionOption::DisallowReducedPrecisionDisallowSplitK;
  g.setAllowFP16ReductionCuBLAS(reduced_precision_reduction, splitk_before_);
#else
  reduced_before_ = g.allowFP16ReductionCuBLAS();
  g.setAllowFP16ReductionCuBLAS(reduced_precision_reduction);
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
  fp16_acc_before_ = g.allowFP16AccumulationCuBLAS();
  g.setAllowFP16AccumulationCuBLAS(fp16_accumulation);
#else
  (void)fp16_accumulation;
#endif
}

CublasFp16Switches::~CublasFp16Switches() {
  auto& g = at::globalContext();  // restores what the constructor found
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
  g.setAllowFP16ReductionCuBLAS(reduced_before_, splitk_before_);
#else
  g.setAllowFP16ReductionCuBLAS(reduced_before_);
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
  g.setAllowFP16AccumulationCuBLAS(fp16_acc_before_);
#endif
}

}  // namespace lab04
