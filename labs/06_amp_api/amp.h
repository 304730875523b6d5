// Lab 06's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 06.
#pragma once

#include <cstdint>
#include <string>

#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab06 {

// The fp16 scale doubles after 10 clean steps (PyTorch: 2000), so that the lab's short run reaches overflow.
inline constexpr int64_t kGrowthInterval = 10;
// clip_grad_norm_'s threshold, meant for the true (unscaled) gradients.
inline constexpr double kClipNorm = 1.0;

// The GradScaler for a precision: enabled for fp16 only; disabled, every call passes through.
amp::GradScaler make_scaler(torch::Device device, torch::ScalarType dtype);

// One training step, correct for fp32 (kFloat: no autocast), bf16 and fp16, the gradients clipped to
// kClipNorm. Returns whether the optimizer stepped (false: the scaler found inf/NaN gradients).
bool train_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, const torch::Tensor& x, const torch::Tensor& y);

// The halfway checkpoint: everything a resumed run needs to continue as the uninterrupted one did.
void save(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
          amp::GradScaler& scaler);

// Loads what save() wrote into the model, the optimizer and the scaler.
void resume(const std::string& path, torch::nn::Sequential& model, torch::optim::Optimizer& opt,
            amp::GradScaler& scaler);

}  // namespace lab06
