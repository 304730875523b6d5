// Exercise 09: gradient accumulation with a GradScaler. This is lab 09's amp.cpp with accumulate's AMP lines
// taken out.
//
// Write accumulate(): one update of the weights from the kMicro micro-batches of the batch (x, y), as if
// the whole batch had been one. The whole batch's loss is the mean over all its samples; .grad adds up
// whatever each backward pass leaves in it. Under fp16 each micro-batch's gradients are scaled (GradScaler),
// and a sum is only one scaled gradient when every term carries the same scale: the scale may change only
// between updates, and the optimizer may step (or skip, on an overflow anywhere in the batch) only once per
// batch. Return whether it stepped. amp.h gives kMicro, the micro-batches per update (4), and micro(t, m),
// the m-th micro-batch of t.
//
// What the lab (labs/09_gradient_accumulation/lab.cpp) measures: your update on one batch against a single
// step on the whole batch (in fp32 and under fp16 autocast), then 24 batches while the scale moves (it
// starts far too high, backs off and grows again) against the lab's own accumulation, and whether your
// return value says when the weights moved.
//
//   amp-lab check 09    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 09    the same on every save, until every check holds
#include "amp.h"

#include "amp/autocast.h"

namespace lab09 {

bool accumulate(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                bool autocast, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();  // once: .grad sums all kMicro micro-batches
  for (int64_t m = 0; m < kMicro; ++m) {
    torch::Tensor loss;
    {
      amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);  // forward and loss only
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m));
      // TODO: `loss` is this micro-batch's mean; what .grad must sum is the whole batch's mean.
    }
    // TODO: this micro-batch's gradients into .grad, in fp16's range, at the one scale of this batch.
  }
  // TODO: one step for the batch (none when a gradient overflowed), then the scale's update.
  return false;  // TODO: whether the optimizer stepped.
}

}  // namespace lab09
