// Exercise 09: gradient accumulation with a GradScaler. This is lab 09's amp.cpp with accumulate's AMP lines
// taken out.
//
// Write accumulate(): one update of the weights from the kMicro micro-batches of the batch (x, y), as if
// the whole batch had been one. The lab (labs/09_gradient_accumulation/lab.cpp) runs your function where it
// runs its own: on one batch against a single step on the whole batch (in fp32 and under fp16 autocast),
// then for 24 batches while the scale moves (it starts far too high, backs off and grows again). amp.h gives
// kMicro, the micro-batches per update (4), and micro(t, m), the m-th micro-batch of t.
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
      // TODO: make `loss` this micro-batch's share of the whole batch's mean loss.
    }
    // TODO: back-propagate the loss through the scaler, so that .grad sums gradients of one scale.
  }
  // TODO: step the optimizer through the scaler and update the scale, once for the whole batch.
  return false;  // TODO: return whether the optimizer stepped.
}

}  // namespace lab09
