// Exercise 14: a per-tensor FP8 scale, current and delayed. This is lab 14's amp.cpp with
// Fp8Scale::quantize's scaling lines taken out.
//
// Write Fp8Scale::quantize(t): t multiplied by its scale and cast to FP8 (this->dtype, largest finite
// value this->max), and the inverse scale for the matmul. FP8 has 3 or 2 mantissa bits and a narrow range
// (E4M3: 448 down to 2^-9; E5M2: 57344 down to 2^-16), too narrow for a tensor's values to fit as they
// are: a per-tensor scale moves the tensor's amax (its largest |value|) onto max / 2^margin, so its
// largest values use the top of the range and the rest fall as little as possible below its bottom:
//   Scaling::None     no scale: a plain cast (beyond max, E5M2 gives inf, E4M3 saturates at 448),
//                     inverse scale 1;
//   Scaling::Current  from this tensor's own amax;
//   Scaling::Delayed  from the largest amax of `history`, the last kHistory amaxes, newest first; this
//                     step's amax then joins the history (on the first call the history is empty: fill
//                     it with this amax).
// Scaled values beyond max saturate at +-max. The lab (labs/14_fp8_scaling/lab.cpp) trains a 3-layer MLP
// with every Linear in FP8 through your function, with current and delayed scaling, and casts step 0's
// tensors with it. amp.h declares Fp8Scale: kHistory (16); the members mode, dtype, max, margin, history;
// `saturated`, when set, receives the share of scaled values beyond max at each call (the lab's instrument).
//
//   amp-lab check 14    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 14    the same on every save, until every check holds
#include "amp.h"

#include <cmath>

#include <torch/autograd.h>

#include "amp/device_caps.h"

namespace lab14 {

// (t * scale) in FP8, and 1/scale (0-dim fp32) for the matmul. Unscaled, a plain cast: beyond the
// format's max, E5M2 overflows to inf, as fp16 does, while E4M3 (e4m3fn, which has no inf) saturates at
// 448 in this PyTorch (the lab measures both casts). Scaled, values beyond max are clipped (as TE does).
std::pair<torch::Tensor, torch::Tensor> Fp8Scale::quantize(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;  // the scale and the history are bookkeeping, never part of the graph
  if (mode == Scaling::None) return {t.to(dtype), torch::ones({}, t.options().dtype(torch::kFloat))};
  // TODO: the scale of this call, for each mode as described above (an all-zero tensor must not make it
  //       inf), and the history kept as Delayed needs it.
  torch::Tensor scale = torch::ones({}, t.options().dtype(torch::kFloat));  // a placeholder: 1, no scale
  const torch::Tensor v = t * scale;
  if (saturated) saturated->push_back((v.abs() > max).sum().item<double>() / double(v.numel()));
  // TODO: no scaled value may become inf or leave FP8's finite range in the cast.
  return {v.to(dtype), scale.reciprocal()};
}

// torchao's emulate mode (mm_float8_emulated, torchao/float8/float8_aten_api.py) divides each operand by
// its scale; this multiplies by the inverse scale, as at::_scaled_mm's CPU fallback does (x / s and
// x * (1 / s) can differ in the last bit).
torch::Tensor fp8_mm_emulated(const torch::Tensor& a8, const torch::Tensor& inv_a, const torch::Tensor& b8,
                              const torch::Tensor& inv_b) {
  return at::matmul(a8.contiguous().to(torch::kFloat).mul_(inv_a),
                    b8.contiguous().to(torch::kFloat).mul_(inv_b));
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// On FP8 tensor cores (CUDA 8.9+) at::_scaled_mm, whose second operand must be column-major; PyTorch's
// CUDA _scaled_mm refuses older devices (aten/src/ATen/native/cuda/Blas.cpp), so those emulate.
torch::Tensor fp8_mm(const torch::Tensor& a8, const torch::Tensor& inv_a, const torch::Tensor& b8,
                     const torch::Tensor& inv_b) {
  static const bool tensor_cores = amp::cuda_compute_capability() >= 89;
  if (a8.is_cuda() && tensor_cores)
    return at::_scaled_mm(a8.contiguous(), b8.t().contiguous().t(), inv_a, inv_b, {}, {}, torch::kFloat);
  return fp8_mm_emulated(a8, inv_a, b8, inv_b);
}

// y = x w^T + b with all three matmuls (forward, input gradient, weight gradient) in FP8.
struct Fp8Linear : torch::autograd::Function<Fp8Linear> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor w, torch::Tensor b,
                               Fp8Layer* layer) {
    auto [x8, inv_x] = layer->x.quantize(x);
    auto [w8, inv_w] = layer->w.quantize(w);
    ctx->save_for_backward({x8, inv_x, w8, inv_w});  // backward multiplies the same FP8 values
    ctx->saved_data["layer"] = reinterpret_cast<int64_t>(layer);
    return fp8_mm(x8, inv_x, w8.t(), inv_w) + b;  // the bias added in fp32
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* layer = reinterpret_cast<Fp8Layer*>(ctx->saved_data["layer"].toInt());
    const auto s = ctx->get_saved_variables();       // x8, inv_x, w8, inv_w
    auto [g8, inv_g] = layer->g.quantize(grads[0]);  // dL/dy in E5M2: gradients need range, not digits
    return {fp8_mm(g8, inv_g, s[2], s[3]), fp8_mm(g8.t(), inv_g, s[0], s[1]), grads[0].sum(0), {}};
  }
};

}  // namespace

// Disabled, the scaler's scale() and update() pass through and step() just steps.
bool fp8_train_step(Params& p, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                    std::vector<Fp8Layer>& layers, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor h = torch::tanh(Fp8Linear::apply(x, p[0], p[1], &layers[0]));
  h = torch::tanh(Fp8Linear::apply(h, p[2], p[3], &layers[1]));
  const torch::Tensor loss = torch::mse_loss(Fp8Linear::apply(h, p[4], p[5], &layers[2]), y);
  scaler.scale(loss).backward();
  const bool stepped = scaler.step(opt);  // skipped when a scaled gradient overflowed to inf/NaN
  scaler.update();
  return stepped;
}

}  // namespace lab14
