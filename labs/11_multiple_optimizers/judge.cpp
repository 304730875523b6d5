// Lab 11's judge: the fp32 gradients of each loss, and the measures that name what backward() got wrong.
// The gradients are computed here without autocast or a scaler, so that nothing in the learner's amp.cpp can
// move them.
#include "judge.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lab/libtorch.h"

namespace lab11::judge {

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

double worst_of(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

// From detached copies of the weights, so that the .grad the learner's backward() fills stays untouched.
Grads fp32_grads(const torch::nn::Linear& m0, const torch::nn::Linear& m1, const torch::Tensor& x,
                 const torch::Tensor& y) {
  const auto w0 = m0->weight.detach().requires_grad_(), b0 = m0->bias.detach().requires_grad_();
  const auto w1 = m1->weight.detach().requires_grad_(), b1 = m1->bias.detach().requires_grad_();
  const auto out0 = torch::addmm(b0, x, w0.t()), out1 = torch::addmm(b1, x, w1.t());
  const torch::Tensor losses[2] = {torch::mse_loss(2 * out0 + 3 * out1, y),
                                   torch::mse_loss(3 * out0 - 5 * out1, y)};
  Grads g;
  for (int l = 0; l < 2; ++l) {
    const auto d = torch::autograd::grad({losses[l]}, {w0, b0, w1, b1}, {}, /*retain_graph=*/true);
    for (int k = 0; k < 2; ++k)
      g[l][k] = torch::cat({d[2 * k].flatten(), d[2 * k + 1].flatten()}).to(torch::kDouble);
  }
  return g;
}

double backward_error(const torch::Tensor (&scaled)[2], const Grads& g, const double (&scale)[2]) {
  if (!torch::isfinite(scaled[0]).all().item<bool>() || !torch::isfinite(scaled[1]).all().item<bool>())
    return 0;
  double worst = 0;
  for (int k = 0; k < 2; ++k)
    worst = worst_of(worst, rel(scaled[k], scale[0] * g[0][k] + scale[1] * g[1][k]));
  return worst;
}

// Under fp16 autocast the weight's gradient comes out of an fp16 matmul and is cast to fp32 (10); under
// bf16 autocast out of a bf16 one (7); without autocast it is fp32's own (23). 64 fp16 values that all
// happen to be bf16 values: about 8^-64.
int grad_bits(const torch::Tensor& g) {
  const auto holds = [&](torch::ScalarType t) {
    return (g.to(t).to(g.scalar_type()).eq(g) | ~torch::isfinite(g)).all().item<bool>();
  };
  return holds(torch::kBFloat16) ? 7 : holds(torch::kHalf) ? 10 : 23;
}

}  // namespace lab11::judge
