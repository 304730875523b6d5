// Lab 15's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab15 {

// A one-head self-attention layer and a linear read-out: x [batch, tokens, dim] -> y [batch, tokens, 1].
struct AttentionImpl : torch::nn::Cloneable<AttentionImpl> {
  AttentionImpl(int64_t dim, int64_t head_dim) : dim(dim), head_dim(head_dim) { reset(); }
  void reset() override {
    using torch::nn::LinearOptions;
    wq = register_module("wq", torch::nn::Linear(LinearOptions(dim, head_dim).bias(false)));
    wk = register_module("wk", torch::nn::Linear(LinearOptions(dim, head_dim).bias(false)));
    wv = register_module("wv", torch::nn::Linear(LinearOptions(dim, head_dim).bias(false)));
    out = register_module("out", torch::nn::Linear(head_dim, /*out_features=*/1));
  }
  int64_t dim, head_dim;
  torch::nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, out{nullptr};
};
TORCH_MODULE(Attention);

// What one forward pass made, for the lab to inspect: the queries, keys and values, the scores q k^T
// (before the 1/sqrt(head_dim) scale) and the prediction.
struct Forward {
  torch::Tensor q, k, v, scores, y;
};

// The forward pass under autocast to `dtype` (kFloat: autocast off). guard = false: every op where
// autocast puts it; guard = true: the scores q k^T in fp32, the rest as autocast chooses.
Forward forward(Attention& net, torch::ScalarType dtype, const torch::Tensor& x, bool guard);

// One Adam step on the MSE of forward(...) against y, through `scaler` (a disabled scaler for fp32 and
// bf16). Returns whether the optimizer stepped; *loss is the step's loss (float).
bool train_step(Attention& net, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, bool guard, const torch::Tensor& x, const torch::Tensor& y,
                double* loss);

}  // namespace lab15
