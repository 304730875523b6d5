// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 16's amp.cpp with LibTorch's
// torch::nn::utils::clip_grad_norm_ on the shard: its own norm, on each rank.
//
// expect-hint: shard-norm
#include "amp.h"

#include "amp/autocast.h"
#include "amp/clip.h"

#include <torch/nn/utils/clip_grad.h>

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
  scaler.unscale_(opt);
  const double norm = torch::nn::utils::clip_grad_norm_(shard, max_norm);
  scaler.step(opt);
  scaler.update();
  return torch::tensor(static_cast<float>(norm));
}

}  // namespace lab16
