// Lab 10's judge (judge.cpp): the lab's own plain step, and the crafted steps penalty_step is held to.
#pragma once

#include <vector>

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp.h"
#include "lab/teacher_student.h"

namespace lab10::judge {

inline constexpr double kOverflowScale = 1e30;  // a scale at which fp16's backward overflows: skip the step
inline constexpr double kTinyFactor = 3e-5;  // the small-gradient batch: the output layer times 3e-5 (~2e-5)
inline constexpr double kTinyResidual = 1e-6;  // ... targets that far from its float64 outputs: dL/dy ~ 8e-9
inline constexpr double kTinyScale = 16384;    // 2^14: dL/dy x scale in fp16's normal range, the penalty's
                                               // backward (about scale x 1) well below fp16's max

// The problem a run starts from: the student's weights and one batch.
struct Setup {
  torch::nn::Sequential start;
  torch::Tensor x, y;
};

// The measures both the lab's runs and the judge's take: a copy of a model in a dtype and its weights as one
// float64 vector (lab/teacher_student.h), and the L2 norm of gradients computed in a dtype.
using lab::copy_of;
using lab::flat;
double norm_of(const std::vector<torch::Tensor>& grads, torch::ScalarType dtype);

// One plain SGD step on loss + penalty, no autocast, no scaler. `with_penalty` false: the loss alone, for
// the update a penalty that never reaches .grad leaves. Every comparison is against this step in float64
// (fp32 for training).
Step reference_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, bool with_penalty,
                    const torch::Tensor& x, const torch::Tensor& y);

// The float64 update of step 0 from the loss alone, SGD at `lr`: what a penalty that never reaches .grad
// leaves.
torch::Tensor loss_only_update(const Setup& s, double lr);

// The step under judgement: penalty_step's signature (amp.cpp's, or --flip's).
using StepFn = decltype(&penalty_step);

// One fp16 step at kOverflowScale, whose scaled gradients overflow fp16: the scaler must skip it, the
// weights stay as they were and the step says it did not step.
struct OverflowStep {
  bool stepped = true, moved = true, finite = false;  // its flag; whether the weights moved; are finite
};
OverflowStep overflow_step(const Setup& s, StepFn step, double lr);

// One fp16 step on the small-gradient batch (kTinyFactor) at scale kTinyScale: its penalty and update
// against the lab's float64 step, and the penalty of the unscaled loss's fp16 gradients (the lab's).
struct TinyStep {
  double ratio = 0, grad_err = 0, unscaled_ratio = 0, zeroed = 0;
  bool stepped = false;
};
TinyStep tiny_step(const Setup& s, StepFn step, double lr);

}  // namespace lab10::judge
