// Lab 02's judge (judge.cpp): the lab's own steps that exist only to judge a learner's train_step.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/loss.h>
#include <torch/optim/optimizer.h>

#include "lab/underflow.h"

namespace lab02::judge {

// Whether the loss times `scale`, back-propagated under fp16 autocast from these weights, gives an inf or
// NaN gradient: the lab's own verdict on a step, which the learner's skips are held to.
bool overflows(const torch::nn::Sequential& model, const lab::underflow::Problem& p, torch::nn::MSELoss& mse,
               double scale);

// The lab's own fp32 step, the reference the checks compare the learner's fp16 training with.
void fp32_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::nn::MSELoss& mse,
               const lab::underflow::Problem& p);

}  // namespace lab02::judge
