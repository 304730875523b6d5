// A wrong solution kept by the tests (tests/test_exercises.cpp): the penalty from the scaled gradients as
// autograd::grad returns them.
//
// expect-hint: penalty-scaled
#include "exercise/10_gradient_penalty.h"

namespace lab10 {
// One training step with a gradient penalty, PyTorch's recipe. autograd::grad of the scaled loss returns
// gradients multiplied by the scale (create_graph: the penalty is differentiated too); multiply them by
// 1/scale, compute the penalty with autocast on, and back-propagate the scaled loss + penalty. step()
// unscales .grad and skips on inf/NaN; update() as usual. `unscale` false (--flip): the multiply is left out.
Step penalty_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                  bool autocast, const torch::Tensor& x, const torch::Tensor& y, bool unscale) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    loss = torch::mse_loss(model->forward(x), y);
  }
  const auto scaled = torch::autograd::grad({scaler.scale(loss)}, model->parameters(), /*grad_outputs=*/{},
                                            /*retain_graph=*/true, /*create_graph=*/true);
  torch::Tensor penalty;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    torch::Tensor sum_sq = torch::zeros({}, loss.options());
    for (const auto& g : scaled) sum_sq = sum_sq + g.pow(2).sum();
    penalty = sum_sq.sqrt();
  }
  scaler.scale(loss + penalty).backward();
  const bool stepped = scaler.step(opt);
  scaler.update();
  return {loss.item<double>(), penalty.item<double>(), stepped};
}
}  // namespace lab10
