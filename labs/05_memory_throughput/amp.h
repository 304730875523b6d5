// Lab 05's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <vector>

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab05 {

// One MSE training step with fp32 weights: under autocast to `dtype` (bf16; fp16 with an enabled
// GradScaler), or plain fp32 when dtype is kFloat.
void train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y);

// The fp32 master copy of a model stored in 16 bits: the tensors the optimizer is built on and updates.
std::vector<torch::Tensor> master_copy(torch::nn::Sequential& model16);

// One MSE step of the 16-bit model on 16-bit inputs x16: its gradients, made fp32, step the master copy,
// which is then rounded back into the model.
void master_step(torch::nn::Sequential& model16, std::vector<torch::Tensor>& master,
                 torch::optim::Optimizer& opt, const torch::Tensor& x16, const torch::Tensor& y);

}  // namespace lab05
