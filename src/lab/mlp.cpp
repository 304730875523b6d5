#include "lab/mlp.h"

#include <string>

#include "lab/libtorch.h"

namespace lab {

MlpImpl::MlpImpl(int64_t width, int layers) {
  for (int i = 0; i < layers; ++i)
    this->layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
}

torch::Tensor MlpImpl::forward(torch::Tensor x, std::vector<torch::Tensor>* saved) {
  for (size_t i = 0; i < layers.size(); ++i) {
    x = layers[i]->forward(x);
    if (saved) saved->push_back(x);
    if (i + 1 == layers.size()) break;
    x = torch::relu(x);
    if (saved) saved->push_back(x);
  }
  return x;
}

torch::Tensor MlpImpl::forward_fp64(const torch::Tensor& x) const {
  torch::Tensor ref = x.to(torch::kDouble);
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    ref = torch::linear(ref, l->weight.to(torch::kDouble), l->bias.to(torch::kDouble));
    if (i + 1 < layers.size()) ref = torch::relu(ref);
  }
  return ref;
}

}  // namespace lab
