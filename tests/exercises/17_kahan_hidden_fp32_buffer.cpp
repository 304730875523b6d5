// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 17's amp.cpp with Kahan's residue kept
// in an fp32 buffer the function holds to itself (by weight): it tracks fp32, at 4 more bytes per weight.
//
// expect-hint: kahan-state-fp32
#include "amp.h"

#include <memory>
#include <vector>

#include <torch/optim/adamw.h>

#include "amp/bf16_step.h"
#include "amp/bf16_update.h"

#include <map>

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  const torch::Tensor sum = weight_bf16.to(torch::kFloat) + update_fp32;
  amp::stochastic_round_(weight_bf16, sum, gen);
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  // the mistake: the residue kept in an fp32 buffer of this function's own, the bf16 one left at zero
  static std::map<const void*, torch::Tensor> residues;
  torch::Tensor& residue = residues[weight_bf16.data_ptr()];
  if (!residue.defined()) residue = torch::zeros_like(update_fp32);
  const torch::Tensor w = weight_bf16.to(torch::kFloat);
  const torch::Tensor y = update_fp32 + residue;
  const torch::Tensor t = (w + y).to(torch::kBFloat16);
  residue.copy_(y - (t.to(torch::kFloat) - w));
  weight_bf16.copy_(t);
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
