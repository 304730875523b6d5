// Lab 09's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 09.
#pragma once

#include <cstdint>

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab09 {

inline constexpr int64_t kMicro = 4;        // micro-batches per optimizer step
inline constexpr int64_t kMicroBatch = 16;  // samples per micro-batch: 64 per step

// The m-th micro-batch of t (rows m * kMicroBatch onwards), a view.
inline torch::Tensor micro(const torch::Tensor& t, int64_t m) {
  return t.narrow(/*dim=*/0, m * kMicroBatch, kMicroBatch);
}

// One update of the weights from the kMicro micro-batches of (x, y), as if the whole batch had been one,
// under fp16 autocast when `autocast` is true. Returns whether the optimizer stepped.
bool accumulate(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                bool autocast, const torch::Tensor& x, const torch::Tensor& y);

}  // namespace lab09
