// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 09's amp.cpp with true returned whatever
// scaler.step() said: a skipped batch is reported as stepped.
//
// expect-hint: flag-wrong
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
      // Divided by kMicro: the sum of the micro-batches' losses is the whole batch's mean.
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m)) / static_cast<double>(kMicro);
    }
    scaler.scale(loss).backward();  // adds this micro-batch's scaled gradients to .grad, all of one scale
  }
  scaler.step(opt);  // its result dropped
  scaler.update();
  return true;  // even when the step was skipped
}

}  // namespace lab09
