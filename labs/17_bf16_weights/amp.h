// Lab 17's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 17.
#pragma once

#include <cstdint>

#include <ATen/core/Generator.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

namespace lab17 {

// The usual mixed-precision update: an fp32 master copy takes the update, the bf16 weights are its copy.
void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32);

// weight (bf16) += update (fp32), the sum rounded stochastically to bf16: no master copy, the update kept
// in expectation. `gen` is the run's generator (seeded once by the lab, advanced by every call).
void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen);

// weight (bf16) += update (fp32) with a bf16 Kahan compensation buffer of weight's shape (zeros at the
// start) that carries what the rounding lost to the next step.
void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32);

// A bf16 model trained by a LibTorch optimizer with no master copy: `steps` full-batch steps of
// mse_loss(model(x), y) (model, x and y in bf16), amp::Bf16Step around torch::optim::AdamW(lr) rounding the
// fp32 update stochastically into the weights, seeded by `seed`. Returns each step's loss (fp32, [steps],
// on the weights' device: no step reads a value back to the host).
torch::Tensor train_bf16_adamw(torch::nn::Linear& model, const torch::Tensor& x, const torch::Tensor& y,
                               int64_t steps, double lr, uint64_t seed);

}  // namespace lab17
