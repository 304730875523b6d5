// Lab 17's judge: stochastic_update drawn many times, against the statistics it must follow.
// Its mean and spread over kDraws copies against the binomial statistics an unbiased, independent rounding
// follows, computed here, and whether it drew from the generator the lab handed in.
#include "judge.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "lab/libtorch.h"

namespace lab17::judge {

namespace {

// kDraws copies of bf16 w0 plus `fraction` of the gap towards the neighbour in u's direction: the mean
// of the results against w0 + u, in binomial sigmas (the gap x sqrt(f(1 - f) / kDraws)); *away: the mean's
// error in gaps, positive away from zero; *spread: the draws' standard deviation in gaps (0: all one value).
double mean_error_sigmas(const Add& add, torch::Device dev, double w0, double fraction, double* away,
                         double* spread) {
  const double gap = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::abs(w0)))) - 7);
  const double u = fraction * gap;  // w0 + u stays in w0's binade for the cases below
  auto w = torch::full({kDraws}, w0, torch::dtype(torch::kBFloat16).device(dev));
  add(w, torch::full({kDraws}, u, torch::dtype(torch::kFloat).device(dev)));
  const double f = std::abs(fraction);
  const double sigma = gap * std::sqrt(f * (1 - f) / kDraws);
  const double error = w.to(torch::kDouble).mean().item<double>() - (w0 + u);
  *away = (w0 < 0 ? -error : error) / gap;
  *spread = w.to(torch::kDouble).std().item<double>() / gap;
  return std::abs(error) / sigma;
}

}  // namespace

Draws measure_draws(const Add& add, at::Generator& gen, torch::Device dev) {
  Draws d;
  // Positive and negative weights, updates up and down, in three binades: a rounding that assumes one gap
  // (a dither of 2^-7, [1, 2)'s) is biased in [2, 4).
  const std::array<std::array<double, 2>, 4> cases = {{{1.0, 0.3}, {-1.5, 0.3}, {0.625, -0.2}, {2.5, 0.3}}};
  d.least_spread = INFINITY;
  for (const auto& c : cases) {
    double away = 0, spread = 0;
    d.worst_sigmas = std::max(d.worst_sigmas, mean_error_sigmas(add, dev, c[0], c[1], &away, &spread));
    if (!(std::abs(away) <= std::abs(d.away_bias))) d.away_bias = away;
    d.least_spread = std::min(d.least_spread, spread);
  }
  if (std::isnan(d.worst_sigmas)) d.worst_sigmas = INFINITY;
  // The generator handed in: one call must advance it from a fresh seed (a draw from the global generator
  // or a new one leaves it as it was, and does not repeat with the lab's seed).
  gen.set_current_seed(gen.current_seed() + 1);
  const torch::Tensor before = gen.get_state();
  auto probe = torch::ones({kDraws}, torch::dtype(torch::kBFloat16).device(dev));
  add(probe,
      torch::full({kDraws}, kRepeatFraction * std::ldexp(1.0, -7), torch::dtype(torch::kFloat).device(dev)));
  d.generator_used = !torch::equal(before, gen.get_state());
  const double gap = std::ldexp(1.0, -7);  // at 1
  auto w = torch::ones({kDraws}, torch::dtype(torch::kBFloat16).device(dev));
  const auto u = torch::full({kDraws}, kRepeatFraction * gap, torch::dtype(torch::kFloat).device(dev));
  for (int64_t i = 0; i < kRepeats; ++i) add(w, u);
  const auto moved = (w.to(torch::kDouble) - 1) / gap;
  d.repeat_moved = moved.mean().item<double>();
  const double expected = std::sqrt(kRepeats * kRepeatFraction * (1 - kRepeatFraction));
  d.spread_ratio = moved.std().item<double>() / expected;
  return d;
}

}  // namespace lab17::judge
