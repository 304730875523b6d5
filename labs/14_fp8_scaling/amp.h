// Lab 14's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 14.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace lab14 {

using Params = std::vector<torch::Tensor>;  // w1, b1, w2, b2, w3, b3: the fp32 master weights

constexpr int64_t kHistory = 16;                    // delayed scaling's amax history (TE's default: 1024)
constexpr double kE4M3Max = 448, kE5M2Max = 57344;  // the formats' largest finite values

enum class Scaling { None, Current, Delayed };

// The scale of one tensor of one layer: its input, its weight or its output gradient.
struct Fp8Scale {
  Scaling mode = Scaling::None;
  torch::ScalarType dtype = torch::kFloat8_e4m3fn;
  double max = kE4M3Max;                     // the format's largest finite value
  double margin = 0;                         // TE's margin: scale = max / amax / 2^margin
  torch::Tensor history;                     // delayed: the last kHistory amaxes, newest first
  std::vector<double>* saturated = nullptr;  // the lab's instrument: the share clipped at each cast

  // (t * scale) cast to dtype, and 1/scale (0-dim fp32) for the matmul; Scaling::None: a plain cast and 1.
  std::pair<torch::Tensor, torch::Tensor> quantize(const torch::Tensor& t);
};

// A Linear's three scales: its input and weight in E4M3, its output gradient in E5M2.
struct Fp8Layer {
  Fp8Scale x, w, g{.dtype = torch::kFloat8_e5m2, .max = kE5M2Max};
};

// a8 @ b8 in fp32 from FP8 operands and their inverse scales, emulated: dequantize, then an fp32 matmul.
torch::Tensor fp8_mm_emulated(const torch::Tensor& a8, const torch::Tensor& inv_a, const torch::Tensor& b8,
                              const torch::Tensor& inv_b);

// One step of the 3-Linear tanh MLP `p` with every Linear in FP8 (layers[i]'s scales). The scaler is
// enabled only for the one-loss-scale recipe (fp16's). Returns whether the optimizer stepped.
bool fp8_train_step(Params& p, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                    std::vector<Fp8Layer>& layers, const torch::Tensor& x, const torch::Tensor& y);

}  // namespace lab14
