// Lab 17's AMP code: three ways to add an fp32 update to bf16 weights. The first keeps an fp32 master
// copy (4 more bytes per weight, kept between steps); the other two keep none, as Zamirai et al. 2020
// ("Revisiting BFloat16 Training", arXiv 2010.06192) propose: stochastic rounding (torchao.optim's
// _AdamW(..., bf16_stochastic_round=True)) and Kahan summation with a bf16 compensation buffer (2 more
// bytes kept). Each call also makes fp32 (and, to round stochastically, int32) temporaries of the weight's
// size, freed when it returns.
// lab.cpp computes update = -lr x gradient in fp32 and calls one of them each step.
#include "amp.h"

#include "amp/bf16_update.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
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

}  // namespace lab17
