// A correct variant kept by the tests (tests/test_exercises.cpp): lab 09's amp.cpp with an explicit unscale_
// before step() (where a clip would go), and the loss divided after scaling.
//
// expect: pass
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
      loss = torch::mse_loss(model->forward(micro(x, m)), micro(y, m));
    }
    (scaler.scale(loss) / static_cast<double>(kMicro)).backward();  // scaled, then this micro-batch's share
  }
  scaler.unscale_(opt);                   // .grad now holds the true gradients (a clip would go here)
  const bool stepped = scaler.step(opt);  // does not unscale again; skipped if the sum holds inf/NaN
  scaler.update();
  return stepped;
}

}  // namespace lab09
