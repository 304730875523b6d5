// Exercise 17: bf16 weights without an fp32 master copy. This is lab 17's amp.cpp with the two update
// steps that need no master copy taken out.
//
// Write stochastic_update() and kahan_update(): each adds an fp32 update to bf16 weights so that updates
// far smaller than bf16's gap at the weight (2^-7 for a weight in [1, 2)) are not lost. The tools are in
// src/amp/bf16_update.h (amp::stochastic_round_, amp::stochastic_round_add_, amp::kahan_add_; read its
// comments), or write them with torch ops. The lab (labs/17_bf16_weights/lab.cpp) trains its regression
// with your functions against fp32 weights (the share of the update lost, the final loss) and draws your
// stochastic rounding 4096 times (its mean against the fp32 value, its spread over 64 repeated adds).
//
//   amp-lab check 17    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 17    the same on every save, until every check holds
#include "amp.h"

#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "amp/bf16_step.h"
#include "amp/bf16_update.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  // TODO: weight := bf16(fp32(weight) + update), rounded stochastically with `gen` (not to nearest: a
  //       plain weight_bf16.add_(update_fp32) loses every update below half the gap).
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  // TODO: Kahan summation: add update + compensation to the weight (rounded to nearest), then store in
  //       compensation what that rounding lost, for the next step.
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
