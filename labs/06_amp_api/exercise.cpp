// Exercise 06: one training step for fp32, bf16 and fp16, and a checkpoint that resumes it. This is lab 06's
// amp.cpp with its AMP lines taken out.
//
// Write the lab's AMP code: the scaler for a precision, one training step that is right in all three
// precisions, and the checkpoint's save and resume. What each precision needs: fp32, nothing; bf16, the
// forward pass and the loss computed in bf16 where autocast's policy allows (bf16 has fp32's range, so its
// gradients need no scaling); fp16, the same in fp16, plus loss scaling, since its gradients underflow
// (kGrowthInterval clean steps before the scale grows). The clip bounds the norm of the true gradients
// (kClipNorm), not of scaled ones; a step whose gradients overflowed must not reach the weights. A resumed
// run must continue exactly as the uninterrupted one: everything whose state changes the next step must be
// saved and restored.
//
// What the lab (labs/06_amp_api/lab.cpp) measures: it trains one MLP with your step in fp32, bf16 and fp16
// (the dtype each Linear ran in, the loss, the tiny gradients kept, the overflowed steps skipped),
// checkpoints it halfway with your save(), resumes fresh objects with your resume() and compares them with
// the uninterrupted run bit for bit.
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
  // TODO: a scaler that scales where the precision needs it, and only there. As written it never does.
  return amp::GradScaler(device, {.growth_interval = kGrowthInterval, .enabled = false});
}

bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    // TODO: the forward pass and the loss in `dtype` where autocast's policy allows. As written, fp32.
    loss = F::cross_entropy(model->forward(x), y);
  }
  // TODO: the backward pass, the clip below on the true gradients, the step (none when they overflowed) and
  //       the scale's update. As written nothing steps.
  torch::nn::utils::clip_grad_norm_(model->parameters(), kClipNorm);
  return false;  // TODO: whether the optimizer stepped.
}

void save(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
          amp::GradScaler& scaler) {
  // TODO: write to `path` everything the next step depends on.
}

void resume(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
            amp::GradScaler& scaler) {
  // TODO: restore what save() wrote, so that the next step is the uninterrupted run's.
}

}  // namespace lab06
