// A correct variant kept by the tests (tests/test_exercises.cpp): lab 10's amp.cpp with the norm of the
// scaled gradients multiplied by 1/scale once, outside autocast, and an explicit unscale_.
//
// expect: pass
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
  const auto scaled = torch::autograd::grad({scaler.scale(loss)}, model->parameters(), /*grad_outputs=*/{},
                                            /*retain_graph=*/true, /*create_graph=*/true);
  std::vector<torch::Tensor> flat;
  for (const auto& g : scaled) flat.push_back(g.flatten());
  // The norm is linear in the scale: the scaled gradients' norm times 1/scale is the true one (fp32: no
  // overflow).
  const torch::Tensor penalty = torch::cat(flat).norm() / scaler.get_scale();
  scaler.scale(loss + penalty).backward();
  scaler.unscale_(opt);                   // explicit: .grad holds the true gradients from here
  const bool stepped = scaler.step(opt);  // does not unscale again; skips on inf/NaN
  scaler.update();
  return {loss.item<double>(), penalty.item<double>(), stepped};
}

}  // namespace lab10
