// Lab 11's judge (judge.cpp): the lab's own fp32 gradients and the measures that hold backward() to them.
#pragma once

#include <array>

#include <torch/nn/modules/linear.h>

namespace lab11::judge {

// Relative error; NaN or inf when either side holds one (an inf that reached the weights).
double rel(const torch::Tensor& a, const torch::Tensor& b);

// The larger of two errors, NaN when either is (std::max(worst, NaN) would drop it and report a pass).
double worst_of(double a, double b);

// fp32 gradients of loss0 and of loss1, each alone, for both models at their current weights (no autocast,
// no scaler): g[l][k] is loss l's gradient of model k. The lab's reference for backward() and the steps.
using Grads = std::array<std::array<torch::Tensor, 2>, 2>;
Grads fp32_grads(const torch::nn::Linear& m0, const torch::nn::Linear& m1, const torch::Tensor& x,
                 const torch::Tensor& y);

// The gradients backward() left against scale0 x the lab's fp32 gradients of loss0 + scale1 x those of
// loss1, worst model: catches a loss not scaled, or scaled by the other loss's scaler (seen once the two
// scalers' scales part). Gradients that overflowed are the skip's to handle (and the other checks'), not a
// value to compare: 0.
double backward_error(const torch::Tensor (&scaled)[2], const Grads& g, const double (&scale)[2]);

// The mantissa bits a gradient reaching a weight carries: 7 when every finite value is a bf16 value, 10 when
// an fp16 value, else 23 (fp32). Catches a forward outside autocast, or under autocast to another dtype.
int grad_bits(const torch::Tensor& g);

}  // namespace lab11::judge
