// The problem labs 02 (loss-scaling) and 07 (bf16-scaling) train on, whose gradients are genuinely small,
// and the tools that measure what a 16-bit format does to them: a float64 reference of step 0's
// activation gradients and the share of them a format turns into zero. The training itself (autocast,
// the GradScaler, the loop) is written out in each lab.
//
// The problem: a 3-layer tanh MLP (16 -> 12 -> 12 -> 16) regresses the outputs of a fixed random
// "teacher" MLP on one batch of 128 inputs. Three ordinary things make its gradients small, as in the
// detection nets of the mixed-precision paper (Micikevicius et al. 2018):
//   - the targets are small (std 0.001: think of a correction term, or a regression in small units),
//   - the MSE is averaged over every output value (batch x outputs = 2048 of them), so each value's
//     gradient is 2 * residual / 2048,
//   - the output layer starts near zero (1% of the default init), so backprop multiplies those gradients
//     by small weights again before they reach the hidden layers.
// The hidden layers are narrower than the output, so the model must learn them, not just its output
// layer: losing their gradients costs accuracy.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/loss.h>
#include <torch/types.h>

#include "amp/grad_scaler.h"

namespace lab::underflow {

struct ProblemOptions {
  int64_t batch = 128;  // one fixed batch: the loss curve shows optimisation, not sampling noise
  int64_t inputs = 16;
  int64_t hidden = 12;  // fewer hidden units than outputs: the hidden layers must learn
  int64_t outputs = 16;
  double target_std = 1e-3;   // small targets -> small residuals
  double output_init = 1e-2;  // the student's output layer starts at 1% of the default init
};

// The student's parameters as plain tensors, in order w1, b1, w2, b2, w3, b3 (see the end of this file).
using Params = std::vector<torch::Tensor>;

struct Problem {
  ProblemOptions options;
  torch::Tensor x;                // [batch, inputs], fp32
  torch::Tensor y;                // [batch, outputs], fp32, std target_std
  torch::nn::Sequential student;  // at step 0: Linear, Tanh, Linear, Tanh, Linear; fp32 parameters
  Params init;                    // the same parameters as plain tensors (lab 14)
};

// Draws teacher, data and student init from torch's current generator (seed it first), on `device`. The
// draws are the same whatever the lab does with them: building the Sequential draws nothing.
Problem make_problem(const ProblemOptions& options, torch::Device device);

// A copy of the model with parameters of its own.
torch::nn::Sequential copy_of(const torch::nn::Sequential& model);

// model->forward(x), keeping each Linear's output in *linear_outputs with retain_grad() on, so that their
// gradients (the activation gradients) can be read after backward().
torch::Tensor forward_keeping(torch::nn::Sequential& model, const torch::Tensor& x,
                              std::vector<torch::Tensor>* linear_outputs);

// The gradients of those outputs, flattened into one float64 CPU tensor and divided by `scale`.
torch::Tensor grads_of(const std::vector<torch::Tensor>& linear_outputs, double scale = 1.0);

// The float64 reference: step 0's activation gradients with the student, the data and `loss` in float64.
torch::Tensor reference_grads(const Problem& problem, torch::nn::MSELoss loss = torch::nn::MSELoss());

// The MSE (averaged) of the model on the problem, evaluated in float64.
double eval_loss(const torch::nn::Sequential& model, const Problem& problem);

// Whether every gradient of the model's parameters is finite (no inf/NaN).
bool grads_finite(const torch::nn::Sequential& model);

// Of the reference values that are nonzero, the share that are exactly zero in `measured`.
double zeroed_share(const torch::Tensor& reference, const torch::Tensor& measured);
// Of the reference values that are nonzero, the share that become zero when cast to `dtype`.
double cast_zeroed_share(const torch::Tensor& reference, torch::ScalarType dtype);

// ---- The parameters as plain tensors, for lab 14, whose FP8 linears take raw weights. ----

// Copies of the parameters, as fresh leaf tensors of `dtype` that require grad.
Params copy_params(const Params& params, torch::ScalarType dtype = torch::kFloat);

// The MSE of `params` evaluated in float64.
double eval_loss(const Params& params, const Problem& problem);

}  // namespace lab::underflow
