// Lab 11's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 11.
#pragma once

#include <array>

#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab11 {

using Stepped = std::array<bool, 2>;  // whether optimizer 0 and optimizer 1 stepped

// The forward passes under fp16 autocast and both losses' backward passes, loss0 scaled with scaler0 and
// loss1 with scaler1. The recipe passes its one scaler as both (lab.cpp also passes two, for a loop with a
// scaler per optimizer).
void backward(torch::nn::Linear& m0, torch::nn::Linear& m1, amp::GradScaler& scaler0,
              amp::GradScaler& scaler1, const torch::Tensor& x, const torch::Tensor& y);

// The recipe's steps for both optimizers with the one scaler, after backward(). Returns whether each stepped.
Stepped step_recipe(torch::optim::Optimizer& o0, torch::optim::Optimizer& o1, amp::GradScaler& scaler);

}  // namespace lab11
