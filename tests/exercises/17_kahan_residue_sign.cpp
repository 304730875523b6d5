// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 17's amp.cpp with the residue's
// sign reversed: (applied - intended) stored, so the next step subtracts what this one lost.
//
// expect-hint: kahan-residue-dropped
#include "amp.h"

#include "amp/bf16_update.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  amp::stochastic_round_add_(weight_bf16, update_fp32, gen);
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  const torch::Tensor w = weight_bf16.to(torch::kFloat);
  const torch::Tensor y = update_fp32 + compensation_bf16.to(torch::kFloat);
  const torch::Tensor t = (w + y).to(torch::kBFloat16);
  compensation_bf16.copy_((t.to(torch::kFloat) - w) - y);
  weight_bf16.copy_(t);
}

}  // namespace lab17
