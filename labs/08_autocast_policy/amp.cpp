// Lab 08's AMP code: an op, a layer's forward and backward pass, and a nested region, each under
// amp::Autocast (torch.autocast). lab.cpp runs them and sets the dtypes they give next to the policy
// PyTorch documents.
#include "amp.h"

#include "amp/autocast.h"

namespace lab08 {

torch::Tensor under_autocast(torch::Device device, torch::ScalarType lowp,
                             const std::function<torch::Tensor()>& op) {
  // Nothing to convert by hand: autocast looks the op up in its lists and casts the inputs it takes.
  amp::Autocast autocast(device, lowp, /*enabled=*/lowp != torch::kFloat);
  return op();
}

torch::Tensor forward_backward(torch::nn::Linear& layer, const torch::Tensor& x, torch::ScalarType lowp) {
  torch::Tensor y;
  {
    // linear computes with 16-bit copies of the fp32 weight and bias; the parameters stay fp32.
    amp::Autocast autocast(x.device(), lowp, /*enabled=*/lowp != torch::kFloat);
    y = layer->forward(x);
  }
  y.to(torch::kFloat).sum().backward();  // outside autocast: the gradients land fp32 on the fp32 parameters
  return y;
}

NestedDtypes nested_off(const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType lowp) {
  amp::Autocast autocast(a.device(), lowp, /*enabled=*/lowp != torch::kFloat);
  NestedDtypes d{};
  d.outer = torch::mm(a, b).scalar_type();
  {
    // As around an op that must run in fp32: enabled=false switches autocast off until the region ends.
    amp::Autocast off(a.device(), lowp, /*enabled=*/false);
    d.inner = torch::mm(a, b).scalar_type();
    d.inner_enabled = amp::is_autocast_enabled(a.device().type());
  }
  d.after = torch::mm(a, b).scalar_type();  // the outer region again
  return d;
}

}  // namespace lab08
