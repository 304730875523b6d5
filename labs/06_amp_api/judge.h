// Lab 06's judge (judge.cpp): the lab's own step and overflow verdict, which exist to judge train_step.
#pragma once

#include <cstddef>

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

namespace lab06::judge {

// The lab's step: backward under autocast in `dtype` (kFloat: none) from the loss times `scale`, the
// gradients divided by it again in fp32, clipped to kClipNorm, AdamW; skipped on an inf/NaN gradient.
// Returns the gradients' 2-norm before the clip (NaN when skipped). Every comparison a check makes is with
// it, never with train_step in another precision (a mistake made in every precision would be in the
// reference too).
double lab_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, torch::ScalarType dtype,
                double scale, const torch::Tensor& x, const torch::Tensor& y);

// Whether fp16's gradients overflow at `scale` from these weights, through the model's first `layers`
// modules: the lab's own verdict on a step, which the learner's skips are held to.
bool overflows(const torch::nn::Sequential& model, size_t layers, double scale, const torch::Tensor& x,
               const torch::Tensor& y);

}  // namespace lab06::judge
