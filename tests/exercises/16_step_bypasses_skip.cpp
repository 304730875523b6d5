// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 16's amp.cpp with opt.step() in place of
// scaler.step(opt): the step is taken on the inf too.
//
// expect-hint: stepped-on-inf
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
  scaler.unscale_(opt);
  torch::Tensor norm = amp::clip_grad_norm_sharded(shard, max_norm, group);
  opt.step();
  scaler.update();
  return norm;
}

}  // namespace lab16
