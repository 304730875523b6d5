// Lab 17's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 17.
#pragma once

#include <ATen/core/Generator.h>
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

}  // namespace lab17
