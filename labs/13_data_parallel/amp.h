// Lab 13's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 13.
#pragma once

#include <cstdint>
#include <vector>

#include <c10/util/intrusive_ptr.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace c10d {
class Backend;
}

namespace lab13 {

constexpr double kInitScale = 65536.0;  // 2^16, the scaler's default start
constexpr int64_t kGrowthInterval = 3;  // the scale doubles after 3 clean steps (PyTorch: 2000)

// This rank's GradScaler, from kInitScale, growing every kGrowthInterval clean steps. `global_verdict`: the
// ranks must agree on every inf/NaN (sharded gradients), so its found_inf is all-reduced over `pg`.
amp::GradScaler make_scaler(torch::Device device, const c10::intrusive_ptr<c10d::Backend>& pg,
                            bool global_verdict);

// Forward under fp16 autocast, then the scaled backward: this rank's gradients, times this rank's scale.
void forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                      const torch::Tensor& y);

// DDP's gradient all-reduce: every gradient averaged over the ranks of `pg`, in one bucket.
void all_reduce_gradients(torch::nn::Sequential& model, const c10::intrusive_ptr<c10d::Backend>& pg);

// scaler.step(opt) on what `opt` holds (every parameter, or this rank's shard), then each owner broadcasts
// its shard (owner_of[i]: parameter i's rank; empty for DDP), then scaler.update(). Whether `opt` stepped.
bool step_and_update(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                     const c10::intrusive_ptr<c10d::Backend>& pg, const std::vector<int>& owner_of);

}  // namespace lab13
