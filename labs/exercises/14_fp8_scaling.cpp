// Exercise 14: a per-tensor FP8 scale, current and delayed (lab 14, labs/14_fp8_scaling.cpp).
//
// Write Fp8Scale::quantize(t): t multiplied by its scale and cast to FP8 (this->dtype, largest finite
// value this->max), and the inverse scale for the matmul. The scale maps the tensor's amax (its largest
// |value|) onto max / 2^margin:
//   Scaling::None     no scale: a plain cast (beyond max, E5M2 gives inf, E4M3 saturates at 448),
//                     inverse scale 1;
//   Scaling::Current  from this tensor's own amax;
//   Scaling::Delayed  from the largest amax of `history`, the last kHistory amaxes, newest first; this
//                     step's amax then joins the history (on the first call the history is empty: fill
//                     it with this amax).
// Scaled values beyond max saturate at +-max. The lab trains a 3-layer MLP with every Linear in FP8.
//
//   amp-lab check 14    builds this file with the lab and runs the lab's checks on it
//   amp-lab watch 14    the same on every save, until every check holds
//
// From the lab (exercise/14_fp8_scaling.h): kHistory (16); the members mode, dtype, max, margin, history;
// `saturated`, when set, receives the share of scaled values beyond max at each call (the lab's instrument).
#include "exercise/14_fp8_scaling.h"

namespace lab14 {

std::pair<torch::Tensor, torch::Tensor> Fp8Scale::quantize(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  const torch::Tensor one = torch::ones({}, t.options().dtype(torch::kFloat));
  if (mode == Scaling::None) return {t.to(dtype), one};
  // TODO: the amax of t (in fp32, at least 1e-30 so that an all-zero tensor does not divide by zero).
  // TODO: the scale, max / 2^margin / amax: current scaling from this amax, delayed from history's largest;
  //       for Delayed, push this amax into the history (newest first, kHistory long).
  const torch::Tensor scale = one;
  const torch::Tensor v = t * scale;
  if (saturated) saturated->push_back((v.abs() > max).sum().item<double>() / double(v.numel()));
  // TODO: saturate v at +-max before the cast.
  return {v.to(dtype), scale.reciprocal()};
}

}  // namespace lab14
