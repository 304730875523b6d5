// Exercise 16: gradient clipping in an AMP step, with the gradients sharded over ranks. This is lab 16's
// amp.cpp with clip_and_step's body taken out.
//
// Write clip_and_step(): the rest of the step after the scaled backward, up to the step through the scaler
// and the scale's update. It is called on one process (group null: `shard` is the whole model) and on each
// of two ranks that each step half of the parameters (group: their c10d process group). max_norm bounds the
// 2-norm of the true gradients, the ones an fp32 step would have: after the scaled backward each gradient
// is the scale times larger, so a norm read then measures the scale as much as the gradient. Clipping
// multiplies every gradient by one factor, min(1, max_norm / (norm + 1e-6)) (PyTorch's), where norm covers
// every gradient of the model: with the gradients sharded no rank holds all of them, and a factor from one
// rank's shard differs from rank to rank and from the unsharded run's. A norm that is inf or NaN (some shard
// overflowed) must leave the gradients as they are (inf times 0 is NaN), and the step is then skipped on
// every rank (the scaler, which make_scaler below gives the process group, sees that). Return the norm of
// the true gradients before the clip.
//
// What the lab (labs/16_gradient_clipping/lab.cpp) measures: your updates and norms, whole and sharded,
// against an fp32 step it writes itself, with a max_norm that binds; a planted inf in one rank's shard must
// skip the step on every rank, and every other step must move every shard. Its runs of the wrong orders
// (clip before the unscale, each shard by its own norm) are context: they show what the mistakes cost.
//
//   amp-lab check 16    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 16    the same on every save, until every check holds
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
  // TODO: every gradient this rank steps clipped to max_norm by the one factor every rank computes from the
  //       norm of all ranks' true gradients, then the step and the scale's update; return that norm. As
  //       written nothing is clipped and nothing steps.
  return torch::zeros({});
}

}  // namespace lab16
