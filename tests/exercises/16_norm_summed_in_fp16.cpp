// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 16's amp.cpp with the global norm by
// hand, the squared gradients summed in fp16: past 65504 (a norm of 256) the sum is inf, so the norm is inf
// and the factor min(1, max_norm / inf) zeroes the gradients.
//
// expect-hint: norm-in-fp16
#include "amp.h"

#include "amp/autocast.h"
#include "amp/clip.h"
#include "amp/distributed.h"

#include <algorithm>
#include <cmath>

namespace lab16 {

// Sharded gradients: the scaler all-reduces found_inf over the group, so every rank skips a step that
// overflowed on any rank (PyTorch's ShardedGradScaler); clip_grad_norm_sharded leaves an inf norm alone.
amp::GradScaler make_scaler(torch::Device device, double init_scale,
                            const c10::intrusive_ptr<c10d::Backend>& group) {
  amp::GradScalerOptions options;
  options.init_scale = init_scale;
  if (group) options.found_inf_reducer = amp::found_inf_all_reduce(group);
  return amp::GradScaler(device, options);
}

void forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                      const torch::Tensor& y) {
  model->zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), torch::kHalf);  // the Linears in fp16, mse_loss in fp32
    loss = torch::mse_loss(model->forward(x), y);
  }
  scaler.scale(loss).backward();  // the fp32 parameters' gradients, times the scale
}

torch::Tensor clip_and_step(torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                            const std::vector<torch::Tensor>& shard, double max_norm,
                            const c10::intrusive_ptr<c10d::Backend>& group) {
  scaler.unscale_(opt);
  torch::NoGradGuard no_grad;
  // the mistake: the squares summed in fp16
  torch::Tensor squared = torch::zeros({1}, torch::dtype(torch::kHalf));
  for (const auto& p : shard) squared += p.grad().to(torch::kHalf).square().sum().cpu();
  torch::Tensor total = squared.to(torch::kFloat);
  if (group) {
    std::vector<torch::Tensor> tensors{total};
    group->allreduce(tensors)->wait();
  }
  const torch::Tensor norm = total.sqrt().reshape({});
  const float n = norm.item<float>();
  const double factor = std::min(1.0, max_norm / (static_cast<double>(n) + 1e-6));
  for (const auto& p : shard) p.grad().mul_(factor);
  scaler.step(opt);
  scaler.update();
  return norm;
}

}  // namespace lab16
