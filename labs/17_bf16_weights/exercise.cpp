// Exercise 17: bf16 weights without an fp32 master copy. This is lab 17's amp.cpp with the two update
// steps that need no master copy taken out.
//
// Write stochastic_update() and kahan_update() from torch ops. Each adds an fp32 update to bf16 weights.
// bf16 keeps 8 significant bits: next to a weight in [1, 2) its neighbours are 2^-7 apart, so an update far
// smaller than that, rounded to nearest, leaves the weight where it was, step after step. Two ways keep it
// without 4 more bytes of fp32 master per weight (Zamirai et al. 2020, "Revisiting BFloat16 Training"):
//   stochastic rounding: the exact sum fp32(weight) + update is rounded to one of its two bf16 neighbours,
//     the farther one with probability (its distance from the nearer) / (the gap), so that on average the
//     weight moves by exactly the update. The randomness comes from `gen`, the lab's seeded generator, one
//     fresh draw per element and per call: the same seed gives the same run, and successive calls differ.
//     bf16 is the upper 16 bits of an fp32's bit pattern.
//   Kahan summation: a bf16 buffer (compensation, zeros at the start) holds what the last rounding lost;
//     it is added back with the next update, so that nothing is lost for good, only delayed.
// The checks measure what your functions do, not how they are written: a file that calls the amp library's
// own versions (which the lab's amp.cpp uses) passes them as well. The exercise is to write the rounding
// yourself.
//
// What the lab (labs/17_bf16_weights/lab.cpp) measures: it trains its regression with your functions
// against fp32 weights (the share of the update lost, the final loss), counts the bytes of state each
// method keeps, and draws your stochastic rounding 4096 times (its mean against the fp32 value, its spread
// over 64 repeated adds). Its pure-bf16 and master-copy runs are context: they show the loss you are to
// prevent, and the usual fix.
//
//   amp-lab check 17    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 17    the same on every save, until every check holds
#include "amp.h"

#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "amp/bf16_step.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  // TODO: weight := the exact sum fp32(weight) + update, rounded stochastically to bf16 with draws from
  //       `gen`: unbiased, and never the same draws twice. As written the update is dropped.
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  // TODO: add the update to the weight so that what the rounding to bf16 loses is not lost for good: it
  //       waits in compensation (bf16, weight's shape) for the next step. As written the update is dropped.
}

// The usual training loop with the optimizer step for bf16 weights: Bf16Step computes AdamW's update in
// fp32 on working copies of the weights and writes the result back to bf16, rounded stochastically (from
// its own generator, seeded here, so the run is reproducible). No fp32 weights outlive a step.
torch::Tensor train_bf16_adamw(torch::nn::Linear& model, const torch::Tensor& x, const torch::Tensor& y,
                               int64_t steps, double lr, uint64_t seed) {
  amp::Bf16StepOptions options;
  options.seed = seed;  // rounding = Stochastic, the default
  amp::Bf16Step opt(
      model->parameters(),
      [lr](std::vector<torch::Tensor> fp32) {
        return std::make_unique<torch::optim::AdamW>(fp32, torch::optim::AdamWOptions(lr));
      },
      options);
  std::vector<torch::Tensor> losses;
  for (int64_t step = 0; step < steps; ++step) {
    opt.zero_grad();
    torch::Tensor loss = torch::mse_loss(model->forward(x).to(torch::kFloat), y.to(torch::kFloat));
    loss.backward();
    opt.step();
    losses.push_back(loss.detach());
  }
  return torch::stack(losses);
}

}  // namespace lab17
