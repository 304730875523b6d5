// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 17's amp.cpp with the update cast to
// bf16 first and then added: the sum is still rounded to nearest.
//
// expect-hint: sr-round-to-nearest
#include "amp.h"

#include "amp/bf16_update.h"

namespace lab17 {

void master_update(torch::Tensor& weight_bf16, torch::Tensor& master_fp32, const torch::Tensor& update_fp32) {
  master_fp32.add_(update_fp32);   // fp32 keeps an update of 1e-4 of the weight (24 significant bits)
  weight_bf16.copy_(master_fp32);  // the bf16 copy the forward pass reads, rounded to nearest
}

void stochastic_update(torch::Tensor& weight_bf16, const torch::Tensor& update_fp32, at::Generator& gen) {
  weight_bf16.add_(update_fp32.to(torch::kBFloat16));
}

void kahan_update(torch::Tensor& weight_bf16, torch::Tensor& compensation_bf16,
                  const torch::Tensor& update_fp32) {
  amp::kahan_add_(weight_bf16, compensation_bf16, update_fp32);
}

}  // namespace lab17
