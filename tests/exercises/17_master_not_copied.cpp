// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 17's amp.cpp with the master copy
// updated in fp32 but never copied back to the bf16 weights: the model reads its starting weights forever.
//
// expect-hint: master-not-copied
#include "amp.h"

#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "amp/bf16_step.h"
#include "amp/bf16_update.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);  // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  // the mistake: the bf16 copy the forward pass reads is never refreshed from the master
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  // bf16(fp32(weight) + update), rounded up with probability (distance to the lower neighbour) / gap: a
  // small update moves the weight one bf16 step now and then, and on average by exactly the update.
  amp::stochastic_round_add_(weight_bf16, update_fp32, gen);
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  // update + compensation is added, rounded to nearest; what the rounding lost goes back into compensation.
  amp::kahan_add_(weight_bf16, compensation_bf16, update_fp32);
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
