// Lab 20's AMP code, as lab.cpp calls it: amp.cpp defines promoted_gemm; the tensor core it runs on is
// lab.cpp's model (TensorCore, defined there; the model and its sources are in lab.cpp's header).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace lab20 {

// An FP8 tensor core's dot products, as lab.cpp models them.
struct TensorCore {
  // false: the accumulator keeps 14 significant bits and truncates (lab.cpp's model); true: an FP32
  // accumulator that rounds to nearest (the lab's FP32 row, and every accumulator under --flip).
  bool fp32_accumulator = false;
  // a [M, K] and b [N, K], FP8 E4M3: each row of a times each row of b, the products added from +0 in one
  // chain over K, 32 at a time, in the accumulator. Returns fp32 [M, N]. Throws std::invalid_argument for
  // other dtypes or shapes.
  torch::Tensor chain(const torch::Tensor& a, const torch::Tensor& b) const;
};

// Products per partial sum before it leaves the tensor core for an FP32 total: 128, DeepSeek-V3's interval
// (four Hopper WGMMA instructions of K = 32), and the k-tile of an H100's cuBLAS FP8 GEMM without fast
// accumulation (as the mmaemu package models it).
constexpr int64_t kPromotionInterval = 128;

// a [M, K] x b [N, K]^T, FP8 E4M3, accumulated with promotion: the tensor core's chain over each run of
// kPromotionInterval products (K order), each partial sum added to an FP32 total. Returns fp32 [M, N], the
// accumulator before the inputs' scales.
torch::Tensor promoted_gemm(const TensorCore& tensor_core, const torch::Tensor& a, const torch::Tensor& b);

}  // namespace lab20
