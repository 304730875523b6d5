// The PyTorch AMP recipe's model for labs that time or count a training step: Linear layers of one width
// with a ReLU between each pair, which can hand back every layer output (the activations) and run the
// same weights in float64 as the accuracy reference.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace lab {

struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t width, int layers);
  // `saved`, when given, collects every Linear and ReLU output: the activations backward keeps.
  torch::Tensor forward(torch::Tensor x, std::vector<torch::Tensor>* saved = nullptr);
  // The same network with its weights and `x` converted to float64: the reference for accuracy.
  torch::Tensor forward_fp64(const torch::Tensor& x) const;
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

}  // namespace lab
