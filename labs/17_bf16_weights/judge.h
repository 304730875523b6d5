// Lab 17's judge (judge.cpp): stochastic_update drawn many times, against the statistics it must follow.
#pragma once

#include <cstdint>
#include <functional>

#include <ATen/core/Generator.h>
#include <torch/types.h>

namespace lab17::judge {

inline constexpr int64_t kDraws = 4096;         // copies rounded stochastically at once
inline constexpr int64_t kRepeats = 64;         // repeated adds of one update to the same copies
inline constexpr double kRepeatFraction = 0.1;  // that update, as a share of the spacing

struct Draws {
  double worst_sigmas = 0;      // the worst of the single-add cases
  double away_bias = 0;         // ... their mean error in gaps, away from zero (the one of largest size)
  double least_spread = 0;      // ... the least of their draws' spreads, in gaps (0: rounded to one value)
  bool generator_used = false;  // a call advanced the lab's generator
  double spread_ratio = 0;      // repeated adds: std of the steps moved / the independent binomial's
  double repeat_moved = 0;      // ... mean steps moved (expected kRepeats x kRepeatFraction)
};

// The rounding add under judgement: bf16 w += fp32 u, drawing from the generator the lab hands in.
using Add = std::function<void(torch::Tensor& w, const torch::Tensor& u)>;

// `add` on crafted weights and updates in three binades, one add and kRepeats adds; `gen` is the generator
// the lab hands the add, which a call must advance.
Draws measure_draws(const Add& add, at::Generator& gen, torch::Device dev);

}  // namespace lab17::judge
