// A wrong solution kept by the tests (tests/test_exercises.cpp): scaled values cast without saturating at
// +-max.
//
// expect-hint: no-saturation
#include "exercise/14_fp8_scaling.h"

namespace lab14 {
// (t * scale) in FP8, and 1/scale (0-dim fp32) for the matmul. Unscaled, a plain cast: beyond the
// format's max, E5M2 overflows to inf, as fp16 does, while E4M3 (e4m3fn, which has no inf) saturates at
// 448 in this PyTorch (the lab measures both casts). Scaled, values beyond max are clipped (as TE does).
std::pair<torch::Tensor, torch::Tensor> Fp8Scale::quantize(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  if (mode == Scaling::None) return {t.to(dtype), torch::ones({}, t.options().dtype(torch::kFloat))};
  const torch::Tensor amax = t.abs().max().to(torch::kFloat).clamp_min(1e-30);
  torch::Tensor scale = max / std::exp2(margin) / amax;  // current scaling: this tensor's amax
  if (mode == Scaling::Delayed) {  // this step's amax only joins the history, for the next steps
    if (!history.defined()) history = amax.expand({kHistory}).clone();  // step 0: no history yet
    scale = max / std::exp2(margin) / history.max();
    history = torch::cat({amax.reshape({1}), history.slice(0, 0, kHistory - 1)});
  }
  const torch::Tensor v = t * scale;
  if (saturated) saturated->push_back((v.abs() > max).sum().item<double>() / double(v.numel()));
  return {v.to(dtype), scale.reciprocal()};
}
}  // namespace lab14
