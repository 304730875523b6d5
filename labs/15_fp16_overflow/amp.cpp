// Lab 15's AMP code: an attention layer whose scores q k^T overflow fp16, and the guard that computes them
// in fp32 inside the autocast region (PyTorch's recipe for an op autocast leaves in fp16 that needs fp32:
// a nested autocast(enabled=False) and the inputs cast to float). lab.cpp runs it in fp32, fp16 and bf16,
// with and without the guard. Exercise 15 has you write the guard (amp-lab exercise 15).
#include "amp.h"

#include <cmath>

#include <torch/types.h>

#include "amp/autocast.h"

namespace lab15 {

Forward forward(Attention& net, torch::ScalarType dtype, const torch::Tensor& x, bool guard) {
  amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);
  Forward f;
  f.q = net->wq(x);  // Linear: autocast's lower-precision list, so fp16/bf16 under autocast
  f.k = net->wk(x);
  f.v = net->wv(x);
  if (guard) {
    // matmul is on autocast's fp16 list, and q k^T sums products of large values: past fp16's 65504.
    // Autocast off here, and the fp16 q and k cast to float, so the matmul runs (and returns) in fp32.
    amp::Autocast fp32_region(x.device(), dtype, /*enabled=*/false);
    f.scores = torch::matmul(f.q.to(torch::kFloat), f.k.to(torch::kFloat).transpose(/*dim0=*/1, /*dim1=*/2));
  } else {
    f.scores = torch::matmul(f.q, f.k.transpose(/*dim0=*/1, /*dim1=*/2));
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(f.q.size(-1)));
  // softmax of fp32 scores stays fp32 (CPU: no list; CUDA: the fp32 list); its output is in [0, 1], so the
  // next matmul may go back to 16 bits.
  const torch::Tensor attention = torch::softmax(f.scores * scale, /*dim=*/-1);
  f.y = net->out(torch::matmul(attention, f.v));
  return f;
}

bool train_step(Attention& net, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                torch::ScalarType dtype, bool guard, const torch::Tensor& x, const torch::Tensor& y,
                double* loss) {
  opt.zero_grad();
  // mse_loss is on autocast's fp32 list: compute it in fp32 from the 16-bit prediction.
  const torch::Tensor l = torch::mse_loss(forward(net, dtype, x, guard).y.to(torch::kFloat), y);
  scaler.scale(l).backward();             // backward from loss x scale
  const bool stepped = scaler.step(opt);  // unscales in fp32; skips the step on inf/NaN
  scaler.update();                        // halves the scale after an inf/NaN
  *loss = l.item<double>();
  return stepped;
}

}  // namespace lab15
