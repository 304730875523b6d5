// Lab 01's AMP code: a training step with fp32 master weights under 16-bit autocast, and the pure 16-bit
// step it is measured against. lab.cpp runs both: in fp32, in pure 16 bits and with master weights.
#include "amp.h"

#include "amp/autocast.h"

namespace lab01 {

bool master_weights_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                         torch::ScalarType low, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    // The parameters stay fp32 (the master weights): autocast casts 16-bit copies of them for each op.
    amp::Autocast autocast(x.device(), low);
    loss = torch::mse_loss(model->forward(x).to(torch::kFloat), y);
  }
  scaler.scale(loss).backward();          // fp32 gradients for the fp32 weights
  const bool stepped = scaler.step(opt);  // w -= lr * grad, in fp32: a small update is not rounded away
  scaler.update();  // fp16 needs the GradScaler (lab 02); for bf16 lab.cpp builds it with enabled = false
  return stepped;
}

void plain_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, const torch::Tensor& x,
                const torch::Tensor& y) {
  opt.zero_grad();
  // A model converted with model->to(kHalf) has 16-bit weights, gradients and update: w - lr * grad is
  // rounded to 16 bits when stored. (With an fp32 model this is the fp32 baseline.)
  torch::mse_loss(model->forward(x).to(torch::kFloat), y).backward();
  opt.step();
}

}  // namespace lab01
