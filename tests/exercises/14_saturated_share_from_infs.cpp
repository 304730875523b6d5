// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 14's amp.cpp that saturates after the
// cast, setting its infs to +-max, and reports those infs as the share clipped: right for E5M2, while for
// E4M3, whose cast saturates at 448 by itself, it reports nothing clipped.
//
// expect-hint: saturated-share
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
  const torch::Tensor amax = t.abs().max().to(torch::kFloat).clamp_min(1e-30);  // all zeros: no 1/0
  torch::Tensor scale = max / std::exp2(margin) / amax;  // current scaling: this tensor's amax
  if (mode == Scaling::Delayed) {  // this step's amax only joins the history, for the next steps
    if (!history.defined()) history = amax.expand({kHistory}).clone();  // step 0: no history yet
    scale = max / std::exp2(margin) / history.max();
    history = torch::cat({amax.reshape({1}), history.slice(0, 0, kHistory - 1)});
  }
  const torch::Tensor v = t * scale;  // the (history's) amax lands on max / 2^margin
  // The mistake: the cast first, then its infs set to +-max and counted as the share clipped. The values are
  // right (E4M3 saturates in the cast), the share is not: E4M3 makes no inf.
  const torch::Tensor q = v.to(dtype).to(torch::kFloat), inf = torch::isinf(q);
  if (saturated) saturated->push_back(inf.sum().item<double>() / double(v.numel()));
  return {torch::where(inf, q.sign() * max, q).to(dtype), scale.reciprocal()};
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
