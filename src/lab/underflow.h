// A small problem whose activation gradients are genuinely small, and the tools to measure what fp16
// does to them. Shared by labs/02_loss_scaling.cpp (Q2) and labs/07_bf16_scaling.cpp (Q7).
//
// The problem: a 3-layer tanh MLP (16 -> 12 -> 12 -> 16) regresses the outputs of a fixed random "teacher"
// MLP on one batch of 128 inputs. Three ordinary things make its gradients tiny, as in the detection
// nets of the mixed-precision paper:
//   - the targets are small (std 0.001: think of a correction term, or a regression in small units),
//   - the MSE is averaged over every output value (batch x outputs = 2048 of them), so each value's
//     gradient is 2 * residual / 2048,
//   - the output layer starts near zero (a common init), so backprop multiplies those gradients by
//     small weights again before they reach the hidden layers.
// The hidden layers are narrower than the output, so the model must learn them, not just its output
// layer: losing their gradients costs accuracy. In float32 none of this matters (Adam rescales each
// parameter's step by its gradient's RMS). In fp16 more than half of the activation gradients fall below
// 2^-24 and become exactly zero.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "amp/grad_scaler.h"

namespace lab::underflow {

struct ProblemOptions {
  int64_t batch = 128;          // one fixed batch: the loss curve shows optimisation, not sampling noise
  int64_t inputs = 16;
  int64_t hidden = 12;          // fewer hidden units than outputs: the hidden layers must learn, not just the output layer
  int64_t outputs = 16;
  double target_std = 1e-3;     // small targets -> small residuals
  double output_init = 1e-2;    // the student's output layer starts at 1% of the default init
  double loss_multiplier = 1.0; // >1 (say, the loss summed instead of averaged): gradients no longer small
};

// The student's parameters, in order w1, b1, w2, b2, w3, b3 (fp32 master weights, or float64 for a reference).
using Params = std::vector<torch::Tensor>;

struct Problem {
  ProblemOptions options;
  torch::Tensor x;  // [batch, inputs], fp32
  torch::Tensor y;  // [batch, outputs], fp32, std target_std
  Params init;      // the student at step 0
};

// Draws teacher, data and student init from torch's current generator (seed it first), on `device`.
Problem make_problem(const ProblemOptions& options, torch::Device device);

// Copies of the parameters, as fresh leaf tensors of `dtype` that require grad.
Params copy_params(const Params& params, torch::ScalarType dtype = torch::kFloat);

// loss_multiplier * mean((mlp(x) - y)^2). Runs in whatever precision the caller set up (autocast or not).
// `activations`, if given, receives the three Linear outputs with retain_grad() on.
torch::Tensor loss_of(const Params& params, const Problem& problem, std::vector<torch::Tensor>* activations = nullptr);

// The MSE (without loss_multiplier) of `params` evaluated in float64.
double eval_loss(const Params& params, const Problem& problem);

// The gradients of the loss with respect to the three Linear outputs, flattened, in float64 and divided
// by `scale` again. autocast_dtype nullopt: a float64 reference pass; otherwise the forward pass and loss
// run under amp::Autocast(autocast_dtype) and the loss is multiplied by `scale` before backward.
torch::Tensor activation_grads(const Params& params, const Problem& problem,
                               std::optional<torch::ScalarType> autocast_dtype, double scale = 1.0);

// The same, with the loss scaled by a real amp::GradScaler (scaler.scale(loss)) and divided by its scale.
torch::Tensor activation_grads(const Params& params, const Problem& problem, torch::ScalarType autocast_dtype,
                               amp::GradScaler& scaler);

// Of the reference values that are nonzero, the share that are exactly zero in `measured`.
double zeroed_share(const torch::Tensor& reference, const torch::Tensor& measured);
// Of the reference values that are nonzero, the share that become zero when reference * scale is cast to dtype.
double cast_zeroed_share(const torch::Tensor& reference, torch::ScalarType dtype, double scale = 1.0);

struct TrainOptions {
  std::optional<torch::ScalarType> autocast;  // nullopt: plain fp32
  std::optional<amp::GradScalerOptions> scaler;  // set: scale the loss with an amp::GradScaler
  int64_t steps = 200;
  double lr = 1e-2;  // Adam
};

struct TrainResult {
  std::vector<double> loss;        // per step, the loss as the run computed it (without loss_multiplier)
  std::vector<double> scale;       // per step, the loss scale used (1 without a scaler)
  std::vector<bool> stepped;       // per step, what scaler.step() returned (always true without a scaler)
  std::vector<bool> overflowed;    // per step, checked independently: a scaled gradient was inf/NaN
  double final_loss = 0;           // float64 evaluation of the trained parameters
  Params params;
  int64_t skipped() const;
  // Whether the steps the scaler skipped are exactly the steps whose gradients overflowed.
  bool skipped_exactly_overflowed() const;
};

TrainResult train(const Problem& problem, const TrainOptions& options);


}  // namespace lab::underflow
