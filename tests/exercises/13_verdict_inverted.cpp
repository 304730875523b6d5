// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 13's amp.cpp with the condition
// inverted: the all-reduce of found_inf goes to the scalers without global_verdict.
//
// expect-hint: verdict-inverted
#include "amp.h"

#include "amp/autocast.h"
#include "amp/distributed.h"

namespace lab13 {

// With sharded gradients, give the scaler the process group: found_inf is then all-reduced before step()
// decides, so every rank skips the same steps (PyTorch's ShardedGradScaler).
amp::GradScaler make_scaler(torch::Device device, const c10::intrusive_ptr<c10d::Backend>& pg,
                            bool global_verdict) {
  amp::GradScalerOptions options{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
  if (!global_verdict) options.found_inf_reducer = amp::found_inf_all_reduce(pg);
  return amp::GradScaler(device, options);
}

void forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                      const torch::Tensor& y) {
  model->zero_grad();  // every gradient, not only the optimizer's shard: all of them are all-reduced
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), torch::kHalf);  // the Linears in fp16, mse_loss in fp32
    loss = torch::mse_loss(model->forward(x), y);
  }
  scaler.scale(loss).backward();  // the fp32 parameters' gradients, times this rank's scale
}

// ZeRO's reduce-scatter sums alike. Each rank scaled its own gradients by its own scale, so the sum holds
// one factor only while the ranks' scales agree.
void all_reduce_gradients(torch::nn::Sequential& model, const c10::intrusive_ptr<c10d::Backend>& pg) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad());
  std::vector<torch::Tensor> bucket{at::flatten_dense_tensors(grads)};
  pg->allreduce(bucket)->wait();  // fails after the group's timeout when a rank stops answering
  bucket[0].div_(pg->getSize());
  const std::vector<torch::Tensor> reduced = at::unflatten_dense_tensors(bucket[0], grads);
  for (size_t i = 0; i < grads.size(); ++i) grads[i].copy_(reduced[i]);
}

// step() unscales and checks only the gradients `opt` holds: a sharded rank sees only its shard's infs.
bool step_and_update(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                     const c10::intrusive_ptr<c10d::Backend>& pg, const std::vector<int>& owner_of) {
  const bool stepped = scaler.step(opt);  // skipped when found_inf (this shard's, or all-reduced) is set
  const std::vector<torch::Tensor> params = model->parameters();
  for (int owner = 0; !owner_of.empty() && owner < pg->getSize(); ++owner) {
    std::vector<torch::Tensor> shard;
    for (size_t i = 0; i < params.size(); ++i)
      if (owner_of[i] == owner) shard.push_back(params[i].data());
    std::vector<torch::Tensor> flat{at::flatten_dense_tensors(shard)};
    c10d::BroadcastOptions from_owner;
    from_owner.rootRank = owner;
    pg->broadcast(flat, from_owner)->wait();  // every replica gets the owner's stepped (or kept) shard
    const std::vector<torch::Tensor> received = at::unflatten_dense_tensors(flat[0], shard);
    for (size_t i = 0; i < shard.size(); ++i) shard[i].copy_(received[i]);
  }
  scaler.update();  // backs off after an inf it saw, grows after clean steps
  return stepped;
}

}  // namespace lab13
