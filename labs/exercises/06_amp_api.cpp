// Exercise 06: one training step for fp32, bf16 and fp16, and a checkpoint that resumes it (lab 06,
// labs/06_amp_api.cpp).
//
// Write the lab's AMP code: the scaler for a precision, one training step that is correct in all three
// precisions (autocast around the forward pass and the loss, the loss scaled, the gradients unscaled
// before they are clipped, step and update through the scaler), and the checkpoint's save and resume.
// The lab trains one MLP with your step in fp32, bf16 and fp16, checkpoints it halfway with your save(),
// resumes fresh objects with your resume() and compares them with the uninterrupted run bit for bit.
//
//   amp-lab check 06    builds this file with the lab and runs the lab's checks on it
//   amp-lab watch 06    the same on every save, until every check holds
//
// From the lab (exercise/06_amp_api.h): kGrowthInterval (10), kClipNorm (1.0), F = torch::nn::functional.
// amp::save_checkpoint(path, module, optimizer, scaler) and amp::load_checkpoint(path, module, optimizer,
// scaler) (amp/checkpoint.h) write and read all three.
#include "exercise/06_amp_api.h"
#include "amp/autocast.h"
#include "amp/checkpoint.h"
#include "amp/grad_scaler.h"

namespace lab06 {

// The GradScaler the lab uses for a precision.
amp::GradScaler make_scaler(torch::Device device, torch::ScalarType dtype) {
  // TODO: enable the scaler for fp16 only (fp32 and bf16 need no loss scaling); keep the growth interval.
  return amp::GradScaler(device, {.growth_interval = kGrowthInterval, .enabled = false});
}

// One training step. Returns whether the optimizer stepped (false: the scaler skipped it).
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

// The halfway checkpoint: everything a resumed run needs to continue exactly as the uninterrupted one.
void save(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
          amp::GradScaler& scaler) {
  // TODO: save the model, the optimizer and the scaler to `path`.
}
void resume(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
            amp::GradScaler& scaler) {
  // TODO: load what save() wrote into the model, the optimizer and the scaler.
}

}  // namespace lab06
