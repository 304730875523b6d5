// Lab 08's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <functional>

#include <torch/nn/modules/linear.h>

namespace lab08 {

// `op` run in an autocast region to `lowp` on `device` (kFloat: autocast off).
torch::Tensor under_autocast(torch::Device device, torch::ScalarType lowp,
                             const std::function<torch::Tensor()>& op);

// The layer's forward pass on x under autocast to `lowp` (kFloat: off), then a backward pass from the sum
// of its output. Returns the output.
torch::Tensor forward_backward(torch::nn::Linear& layer, const torch::Tensor& x, torch::ScalarType lowp);

// mm's dtype in an autocast region, inside a nested region that switches autocast off, and after it.
struct NestedDtypes {
  torch::ScalarType outer, inner, after;
  bool inner_enabled;  // at::autocast's flag inside the nested region
};
// mm(a, b) in those three places, the outer region to `lowp` (kFloat: off).
NestedDtypes nested_off(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType lowp);

}  // namespace lab08
