// Lab 13's judge: the DDP step of the lab's own ddp run, which the sharded runs are checked against.
// Written here, not taken from amp.cpp, so that a mistake made in every run (gradients not averaged, a loss
// not scaled) cannot hide by matching itself.
#include "judge.h"

#include <vector>

#include "amp/autocast.h"
#include "amp/distributed.h"
#include "lab/libtorch.h"

namespace lab13::judge {

void reference_forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                                const torch::Tensor& y) {
  model->zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), torch::kHalf);
    loss = torch::mse_loss(model->forward(x), y);
  }
  scaler.scale(loss).backward();
}

void reference_all_reduce(torch::nn::Sequential& model, const c10::intrusive_ptr<c10d::Backend>& pg) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad());
  std::vector<torch::Tensor> bucket{at::flatten_dense_tensors(grads)};
  pg->allreduce(bucket)->wait();
  bucket[0].div_(pg->getSize());  // the mean: what one big batch's gradient is
  const std::vector<torch::Tensor> reduced = at::unflatten_dense_tensors(bucket[0], grads);
  for (size_t i = 0; i < grads.size(); ++i) grads[i].copy_(reduced[i]);
}

}  // namespace lab13::judge
