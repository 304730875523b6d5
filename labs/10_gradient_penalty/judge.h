// Lab 10's judge (judge.cpp): the lab's own plain step, which every check compares penalty_step with.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp.h"

namespace lab10::judge {

// One plain SGD step on loss + penalty, no autocast, no scaler. `with_penalty` false: the loss alone, for
// the update a penalty that never reaches .grad leaves. Every comparison is against this step in float64
// (fp32 for training).
Step reference_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, bool with_penalty,
                    const torch::Tensor& x, const torch::Tensor& y);

}  // namespace lab10::judge
