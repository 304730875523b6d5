// A wrong solution kept by the tests (tests/test_exercises.cpp): zero_grad() inside the loop: only the last
// micro-batch's gradients remain.
//
// expect-hint: zero-grad-inside
#include "exercise/09_gradient_accumulation.h"

namespace lab09 {
// One update of the weights from kMicro micro-batches, PyTorch's recipe. Each loss is divided by kMicro (the
// mean over the whole batch), scaled and back-propagated: .grad sums gradients that all carry one scale.
// unscale_ (inside step), step and update run after the last micro-batch. Returns whether it stepped.
bool accumulate(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                bool autocast, const torch::Tensor& x, const torch::Tensor& y) {
  for (int64_t m = 0; m < kMicro; ++m) {
    opt.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);  // forward and loss only
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m)) / static_cast<double>(kMicro);
    }
    scaler.scale(loss).backward();  // adds this micro-batch's scaled gradients to .grad
  }
  const bool stepped = scaler.step(opt);  // unscales the sum in place; skipped if it holds inf/NaN
  scaler.update();                        // the next scale, from this step's inf check
  return stepped;
}
}  // namespace lab09
