// A correct variant kept by the tests (tests/test_exercises.cpp): the norm read on the host
// and the clip skipped there when it is not finite; scaler.step's flag read, then update.
//
// expect: pass
#include "amp.h"

#include "amp/autocast.h"
#include "amp/clip.h"
#include "amp/distributed.h"

#include <cmath>
#include <stdexcept>

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
  scaler.unscale_(opt);  // the true gradients, found_inf all-reduced over the group by the scaler
  torch::Tensor norm = amp::clip_grad_norm_sharded(shard, max_norm, group);
  const bool finite = std::isfinite(norm.item<float>());
  const bool stepped = scaler.step(opt);
  scaler.update();
  if (stepped != finite) throw std::logic_error("the step and the norm disagree on the inf");
  return norm;
}

}  // namespace lab16
