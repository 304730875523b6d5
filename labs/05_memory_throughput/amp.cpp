// Lab 05's AMP code: the two ways a training step uses 16-bit values whose bytes and speed the lab
// measures. Autocast keeps the weights fp32 and casts 16-bit copies of them per step; the mixed-precision
// paper's recipe stores the model in 16 bits and keeps an fp32 master copy for the optimizer. lab.cpp runs
// both.
#include "amp.h"

#include "amp/autocast.h"

namespace lab05 {

void train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    // Each Linear runs on 16-bit copies of the fp32 weights, which the forward keeps for backward.
    amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);
    loss = torch::mse_loss(model->forward(x), y);
  }
  scaler.scale(loss).backward();  // fp16: the loss times the scale; a disabled scaler leaves it as is
  scaler.step(opt);               // unscales in fp32 and skips on inf/NaN; disabled: opt.step()
  scaler.update();                // fp16: halves the scale after an overflow, grows it after clean steps
}

// Pure 16-bit training with fp32 master weights (Micikevicius et al. 2018). (fp16 would also need a loss
// scale: lab 02.)
std::vector<torch::Tensor> master_copy(torch::nn::Sequential& model16) {
  std::vector<torch::Tensor> master;
  // The optimizer is built on these fp32 tensors, not on the 16-bit model's parameters.
  for (const auto& p : model16->parameters()) master.push_back(p.detach().to(torch::kFloat).requires_grad_());
  return master;
}

void master_step(torch::nn::Sequential& model16, std::vector<torch::Tensor>& master,
                 torch::optim::Optimizer& opt, const torch::Tensor& x16, const torch::Tensor& y) {
  model16->zero_grad();
  torch::mse_loss(model16->forward(x16).to(torch::kFloat), y).backward();  // the loss in fp32
  const auto params = model16->parameters();
  // fp32 copies of the 16-bit gradients, for Adam: they exist only during the optimizer step.
  for (size_t i = 0; i < params.size(); ++i) master[i].mutable_grad() = params[i].grad().to(torch::kFloat);
  opt.step();  // updates the fp32 master weights, where small updates are not rounded away
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].copy_(master[i]);  // rounds the updated fp32 weights to 16 bits
    master[i].mutable_grad() = torch::Tensor();
  }
}

}  // namespace lab05
