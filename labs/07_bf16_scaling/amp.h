// Lab 07's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab07 {

// The forward pass and the MSE loss under autocast to `dtype`; plain fp32 when dtype is kFloat.
torch::Tensor loss_of(torch::nn::Sequential& model, torch::ScalarType dtype, const torch::Tensor& x,
                      const torch::Tensor& y);

// One optimizer step under autocast to `dtype` with no loss scale: bf16's whole recipe (fp16 through it:
// unscaled; kFloat: plain fp32).
void step_without_scaler(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::ScalarType dtype,
                         const torch::Tensor& x, const torch::Tensor& y);

// One optimizer step under fp16 autocast with loss scaling by `scaler`, as in lab 02.
void fp16_step_with_scaler(torch::nn::Sequential& model, torch::optim::Optimizer& opt,
                           amp::GradScaler& scaler, const torch::Tensor& x, const torch::Tensor& y);

}  // namespace lab07
