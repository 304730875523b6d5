// Lab 10's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 10.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab10 {

// What one step measured: its loss and penalty (as computed, before scaling) and whether the optimizer
// stepped.
struct Step {
  double loss = 0, penalty = 0;
  bool stepped = true;
};

// One optimizer step on loss + penalty, the penalty the L2 norm of the loss's gradients with respect to the
// weights: under fp16 autocast with the scaler when `autocast`, else plain (the scaler disabled).
Step penalty_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                  bool autocast, const torch::Tensor& x, const torch::Tensor& y);

}  // namespace lab10
