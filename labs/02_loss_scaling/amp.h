// Lab 02's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 02.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/loss.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab02 {

// The forward pass and the loss: under fp16 autocast when dtype is kHalf, plain fp32 when it is kFloat.
torch::Tensor loss_of(torch::nn::Sequential& model, torch::nn::MSELoss& mse, torch::ScalarType dtype,
                      const torch::Tensor& x, const torch::Tensor& y);

// One optimizer step on (x, y) with fp32 master weights and loss scaling; with the scaler disabled, fp16
// (or fp32) without scaling. Returns whether the optimizer stepped.
bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::nn::MSELoss& mse, torch::ScalarType dtype, const torch::Tensor& x,
                const torch::Tensor& y);

}  // namespace lab02
