// Exercise 10: a gradient penalty with a GradScaler. This is lab 10's amp.cpp with penalty_step's AMP lines
// taken out.
//
// Write penalty_step(): one SGD step on loss + penalty through the GradScaler, where the penalty is the L2
// norm of the loss's gradients with respect to the weights. Those gradients come from the graph itself,
// before the backward pass that steps; the penalty must stay differentiable (its gradient flows into the
// step) and the loss's graph must survive for that backward pass. Under fp16 the gradients of the unscaled
// loss underflow as any fp16 gradient does, so they are taken of the scaled loss; the scale is then in each
// of them, and the penalty must be the norm of the true gradients. The penalty is part of the forward
// computation, so it is computed under the same autocast as the loss.
//
// What the lab (labs/10_gradient_penalty/lab.cpp) measures: at step 0 your penalty and the gradients the
// optimizer receives, in fp32 and fp16, against float64's; then fp16 training against fp32's, a step whose
// gradients overflow (skipped), and small gradients that fp16 would lose. Returns the loss, the penalty
// and whether the optimizer stepped.
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
  // TODO: the gradients of the loss with respect to the weights, in fp16's range, differentiable, and with
  //       the loss's graph kept for the backward pass below.
  std::vector<torch::Tensor> grads;
  torch::Tensor penalty = torch::zeros({}, loss.options());
  {
    amp::Autocast ac(x.device(), torch::kHalf, /*enabled=*/autocast);
    // TODO: the penalty: the 2-norm of the true gradients (all weights together). As written it is 0.
  }
  // TODO: the step on loss + penalty: its gradients in fp16's range, the optimizer on the true gradients
  //       (none when they overflowed), the scale's update. As written nothing steps.
  return {loss.item<double>(), penalty.item<double>(), /*stepped=*/false};
}

}  // namespace lab10
