// A correct variant kept by the tests (tests/test_exercises.cpp): the norm read on the host
// and the clip skipped there when it is not finite; scaler.step's flag read, then update.
//
// expect: pass
#include "amp.h"

#include "amp/autocast.h"
#include "amp/clip.h"

#include <cmath>
#include <stdexcept>

namespace lab16 {

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
