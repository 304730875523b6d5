// Exercise 10: a gradient penalty with a GradScaler. This is lab 10's amp.cpp with penalty_step's AMP lines
// taken out.
//
// Write penalty_step(): one SGD step on loss + penalty, where the penalty is the L2 norm of the loss's
// gradients with respect to the weights. Under fp16 autocast the loss is scaled, and autograd::grad of a
// scaled loss returns scaled gradients. The lab (labs/10_gradient_penalty/lab.cpp) runs your function where
// it runs its own: at step 0 in float64, fp32 and fp16 (the penalty and the gradients the optimizer
// receives, against float64's), then in training. Returns the loss, the penalty and whether the optimizer
// stepped.
//
//   amp-lab check 10    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 10    the same on every save, until every check holds
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
  // TODO: take the gradients of the *scaled* loss with torch::autograd::grad (create_graph=true, so the
  //       penalty can be differentiated, and retain_graph=true, so the loss can still be back-propagated).
  std::vector<torch::Tensor> grads;
  torch::Tensor penalty = torch::zeros({}, loss.options());
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    // TODO: the penalty: the square root of the sum of the squared gradients, each multiplied by
    //       1 / scaler.get_scale() first, so it is the true gradients' norm.
  }
  scaler.scale(loss + penalty).backward();  // from here the usual recipe, on loss + penalty
  const bool stepped = scaler.step(opt);    // unscales .grad in fp32; skips on inf/NaN
  scaler.update();
  return {loss.item<double>(), penalty.item<double>(), stepped};
}

}  // namespace lab10
