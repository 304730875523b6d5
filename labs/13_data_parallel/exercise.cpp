// Exercise 13: one inf/NaN verdict for sharded gradients. This is lab 13's amp.cpp with make_scaler's
// global verdict taken out.
//
// Write make_scaler(): each rank's GradScaler. Two ranks train one model over c10d (Gloo, on 127.0.0.1)
// under fp16 autocast. A GradScaler decides from the gradients it unscales whether the step had an inf or
// NaN: it skips that step and halves its scale. With DDP every rank holds every all-reduced gradient, so
// every rank sees the same infs and decides alike. With sharded gradients (ZeRO) each rank unscales and
// checks only its own shard, so an overflow in one shard is seen by one rank: that rank skips and backs
// off, the other steps and keeps its scale, and from then on the ranks add up gradients scaled by
// different factors and their replicas drift apart.
//
// What must hold when global_verdict is true: a step is skipped on every rank when any rank's shard held an
// inf or NaN, and on none otherwise, so that the ranks' scales stay equal and sharded training ends where
// DDP ends. The lab (labs/13_data_parallel/lab.cpp) runs DDP, then sharded training with global_verdict
// false and true, and compares the last with DDP (weights, scales, the flags step_and_update returns). Its
// DDP run and the sharded run without the global verdict are context: they show the problem.
//
//   amp-lab check 13    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 13    the same on every save, until every check holds
//
// From amp.h: kInitScale (2^16), kGrowthInterval (3).
#include "amp.h"

#include "amp/autocast.h"
#include "amp/distributed.h"

namespace lab13 {

// This rank's scaler; with global_verdict, one whose skip decision is the same on every rank of pg.
amp::GradScaler make_scaler(torch::Device device, const c10::intrusive_ptr<c10d::Backend>& pg,
                            bool global_verdict) {
  amp::GradScalerOptions options{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
  // TODO: when global_verdict, the decision to skip must be every rank's: a step skipped on all ranks when
  //       any rank's shard overflowed. As written each rank decides from its own shard alone.
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
