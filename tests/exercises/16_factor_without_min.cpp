// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 16's amp.cpp with the global norm by
// hand and the factor max_norm / norm without min(1, ...): where the norm is below max_norm, the gradients
// are scaled up to it.
//
// expect-hint: factor-without-min
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
  torch::Tensor squared = torch::zeros({1}, torch::dtype(torch::kDouble));
  for (const auto& p : shard) squared += p.grad().to(torch::kDouble).square().sum().cpu();
  if (group) {
    std::vector<torch::Tensor> tensors{squared};
    group->allreduce(tensors)->wait();
  }
  const torch::Tensor norm = squared.sqrt().to(torch::kFloat).reshape({});
  const float n = norm.item<float>();
  if (std::isfinite(n)) {
    const double factor = max_norm / (static_cast<double>(n) + 1e-6);  // the mistake: no min(1, ...)
    for (const auto& p : shard) p.grad().mul_(factor);
  }
  scaler.step(opt);
  scaler.update();
  return norm;
}

}  // namespace lab16
