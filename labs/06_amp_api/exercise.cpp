// Exercise 06: one training step for fp32, bf16 and fp16, and a checkpoint that resumes it. This is lab 06's
// amp.cpp with its AMP lines taken out.
//
// Write the lab's AMP code: the scaler for a precision, one training step that is correct in all three
// precisions (autocast around the forward pass and the loss, the loss scaled, the gradients unscaled
// before they are clipped, step and update through the scaler), and the checkpoint's save and resume.
// The lab (labs/06_amp_api/lab.cpp) trains one MLP with your step in fp32, bf16 and fp16, checkpoints it
// halfway with your save(), resumes fresh objects with your resume() and compares them with the
// uninterrupted run bit for bit. amp.h gives kGrowthInterval (10) and kClipNorm (1.0);
// amp::save_checkpoint(path, module, optimizer, scaler) and amp::load_checkpoint(path, module, optimizer,
// scaler) (amp/checkpoint.h) write and read all three.
//
//   amp-lab check 06    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 06    the same on every save, until every check holds
#include "amp.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include "amp/autocast.h"
#include "amp/checkpoint.h"

namespace lab06 {

namespace F = torch::nn::functional;

amp::GradScaler make_scaler(torch::Device device, torch::ScalarType dtype) {
  // TODO: enable the scaler for fp16 only (fp32 and bf16 need no loss scaling); keep the growth interval.
  return amp::GradScaler(device, {.growth_interval = kGrowthInterval, .enabled = false});
}

bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    // TODO: run the forward pass and the loss under amp::Autocast in `dtype` (disabled for fp32).
    loss = F::cross_entropy(model->forward(x), y);
  }
  // TODO: back-propagate the scaled loss.
  // TODO: unscale the gradients, so that the clipping below sees their true size.
  torch::nn::utils::clip_grad_norm_(model->parameters(), kClipNorm);
  // TODO: step the optimizer through the scaler and update the scale.
  return false;  // TODO: return whether the optimizer stepped.
}

void save(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
          amp::GradScaler& scaler) {
  // TODO: save the model, the optimizer and the scaler to `path`.
}

void resume(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
            amp::GradScaler& scaler) {
  // TODO: load what save() wrote into the model, the optimizer and the scaler.
}

}  // namespace lab06
