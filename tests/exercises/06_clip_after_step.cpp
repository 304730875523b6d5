// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 06's amp.cpp with the gradients clipped
// after the step: the optimizer steps them unclipped, and the clip only changes what is thrown away.
//
// expect-hint: clip-after-step
#include "amp.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include "amp/autocast.h"
#include "amp/checkpoint.h"

namespace lab06 {

namespace F = torch::nn::functional;

amp::GradScaler make_scaler(torch::Device device, torch::ScalarType dtype) {
  // Only fp16 needs loss scaling (bf16 has fp32's exponent range); disabled, every call passes through.
  return amp::GradScaler(device, {.growth_interval = kGrowthInterval, .enabled = dtype == torch::kHalf});
}

bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);  // forward and loss only
    loss = F::cross_entropy(model->forward(x), y);  // the Linears run in 16 bits, cross_entropy in fp32
  }
  scaler.scale(loss).backward();          // backward outside autocast; scale() multiplies by the loss scale
  scaler.unscale_(opt);                   // true-size gradients, so the clip threshold means what it says
  const bool stepped = scaler.step(opt);  // skipped if unscale_ found inf/NaN (the step's one host sync)
  torch::nn::utils::clip_grad_norm_(model->parameters(), kClipNorm);  // the mistake: after the step
  scaler.update();  // fp16: halve the scale after an overflow, grow it after clean steps
  return stepped;
}

// The scaler's scale and growth tracker are training state: a checkpoint without them does not resume fp16.
void save(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
          amp::GradScaler& scaler) {
  amp::save_checkpoint(path, *model, opt, scaler);
}

void resume(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
            amp::GradScaler& scaler) {
  amp::load_checkpoint(path, *model, opt, scaler);
}

}  // namespace lab06
