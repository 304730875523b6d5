// Lab 01's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab01 {

// One step with fp32 master weights: autocast runs the forward pass in `low` (fp16 or bf16) from 16-bit
// copies of the fp32 parameters, and the update is added to the fp32 weights. Returns whether it stepped.
bool master_weights_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                         torch::ScalarType low, const torch::Tensor& x, const torch::Tensor& y);

// One step in the model's own dtype: pure 16-bit training for a 16-bit model, the baseline for an fp32 one.
void plain_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, const torch::Tensor& x,
                const torch::Tensor& y);

}  // namespace lab01
