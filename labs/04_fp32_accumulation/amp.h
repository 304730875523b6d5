// Lab 04's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>
#include <torch/version.h>

namespace lab04 {

// Running sums of the rows of `products` ([K, n]: the terms of n dot products), kept in `acc` and read at
// each length in `at` (ascending): one rounding to `acc` per add.
std::vector<torch::Tensor> running_sums(const torch::Tensor& products, torch::ScalarType acc,
                                        const std::vector<int64_t>& at);

// Blocked fp16 accumulation, read at each length in `at`: fp16 partial sums of `block` products, each added
// to an fp16 running sum.
std::vector<torch::Tensor> blocked_fp16_sums(const torch::Tensor& products, int64_t block,
                                             const std::vector<int64_t>& at);

// Whether this LibTorch can switch cuBLAS to an fp16 accumulator (2.7+).
constexpr bool kHasFp16AccumulationSwitch = TORCH_VERSION_MAJOR > 2 ||
                                            (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7);

// cuBLAS's two switches for fp16 GEMMs, set for one scope and restored after: PyTorch's
// torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction (default true: split-K partial sums
// may be added in fp16) and allow_fp16_accumulation (default false; true: an fp16 accumulator, LibTorch
// 2.7+). They change CUDA GEMMs only.
class CublasFp16Switches {
 public:
  CublasFp16Switches(bool reduced_precision_reduction, bool fp16_accumulation);
  ~CublasFp16Switches();
  CublasFp16Switches(const CublasFp16Switches&) = delete;
  CublasFp16Switches& operator=(const CublasFp16Switches&) = delete;

 private:
  bool reduced_before_ = true, splitk_before_ = true, fp16_acc_before_ = false;
};

}  // namespace lab04
