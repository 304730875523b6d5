// Exercise 16: gradient clipping in an AMP step, with the gradients sharded over ranks. This is lab 16's
// amp.cpp with clip_and_step's clipping taken out.
//
// Write clip_and_step(): the rest of the step after the scaled backward. It is called on one process
// (group null: `shard` is the whole model) and on each of two ranks that each step half of the parameters
// (group: their c10d process group). Clip the true gradients to a 2-norm of at most max_norm over every
// rank, by one factor on every rank, then step and update; return that global norm. The lab
// (labs/16_gradient_clipping/lab.cpp) compares the updates and norms with an fp32 step it writes itself,
// and plants an inf in one rank's shard, which must skip the step on every rank.
//
//   amp-lab check 16    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 16    the same on every save, until every check holds
//
// amp/clip.h: amp::clip_grad_norm_sharded(params, max_norm, group) scales the gradients of this rank's
// params by min(1, max_norm / (norm + 1e-6)), norm over every rank of group, and returns that norm. The
// scaler (make_scaler, below: given the group) skips a step with an inf on every rank.
#include "amp.h"

#include "amp/autocast.h"
#include "amp/clip.h"
#include "amp/distributed.h"

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
  // TODO: make the gradients the true ones (the scale divided out) before anything reads them.
  // TODO: clip the gradients of `shard` to max_norm by the norm over every rank of `group`, and keep that
  //       norm to return.
  torch::Tensor norm = torch::zeros({});
  scaler.step(opt);  // skipped on every rank when some shard held an inf
  scaler.update();
  return norm;
}

}  // namespace lab16
