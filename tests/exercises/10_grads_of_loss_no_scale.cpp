// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 10's amp.cpp with autograd::grad of the
// loss itself, not scaler.scale(loss), and no multiply by 1/scale: right in fp32 and wherever fp16 holds the
// gradients, it loses the ones below fp16's range that the scale would have kept.
//
// expect-hint: penalty-of-unscaled-loss
#include "amp.h"

#include <torch/autograd.h>

#include "amp/autocast.h"

namespace lab10 {

Step penalty_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                  bool autocast, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    loss = torch::mse_loss(model->forward(x), y);
  }
  // The gradients of the scaled loss, so that small ones survive fp16: they come back multiplied by the
  // scale. create_graph: the penalty made of them is differentiated too; retain_graph: loss is used again.
  const auto scaled = torch::autograd::grad({loss}, model->parameters(), /*grad_outputs=*/{},  // not scaled
                                            /*retain_graph=*/true, /*create_graph=*/true);
  torch::Tensor penalty;
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);  // the penalty is part of the forward
    torch::Tensor sum_sq = torch::zeros({}, loss.options());
    for (const auto& g : scaled) sum_sq = sum_sq + g.pow(2).sum();  // never scaled: no 1/scale
    penalty = sum_sq.sqrt();
  }
  scaler.scale(loss + penalty).backward();  // from here the usual recipe, on loss + penalty
  const bool stepped = scaler.step(opt);    // unscales .grad in fp32; skips on inf/NaN
  scaler.update();
  return {loss.item<double>(), penalty.item<double>(), stepped};
}

}  // namespace lab10
