// A wrong solution kept by the tests (tests/test_exercises.cpp): each micro-batch's loss not divided by
// kMicro.
//
// expect-hint: loss-not-divided
#include "exercise/09_gradient_accumulation.h"

namespace lab09 {
// One update of the weights from kMicro micro-batches, PyTorch's recipe. Each loss is divided by kMicro (the
// mean over the whole batch), scaled and back-propagated: .grad sums gradients that all carry one scale.
// unscale_ (inside step), step and update run after the last micro-batch. Returns whether it stepped.
bool accumulate(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                bool autocast, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  for (int64_t m = 0; m < kMicro; ++m) {
    torch::Tensor loss;
    {
      amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);  // forward and loss only
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m));
    }
    scaler.scale(loss).backward();  // adds this micro-batch's scaled gradients to .grad
  }
  const bool stepped = scaler.step(opt);  // unscales the sum in place; skipped if it holds inf/NaN
  scaler.update();                        // the next scale, from this step's inf check
  return stepped;
}
}  // namespace lab09
