// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 15's amp.cpp with the autocast-off
// region left open past the scores: the values' matmul and the read-out run in fp32 too.
//
// expect-hint: rest-in-fp32
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
  const double scale = 1.0 / std::sqrt(static_cast<double>(f.q.size(-1)));
  if (guard) {
    // the mistake: the autocast-off region holds the rest of the forward too, all of it in fp32
    amp::Autocast fp32_region(x.device(), dtype, /*enabled=*/false);
    f.scores = torch::matmul(f.q.to(torch::kFloat), f.k.to(torch::kFloat).transpose(/*dim0=*/1, /*dim1=*/2));
    const torch::Tensor attention = torch::softmax(f.scores * scale, /*dim=*/-1);
    f.y = net->out(torch::matmul(attention, f.v.to(torch::kFloat)));
    return f;
  }
  f.scores = torch::matmul(f.q, f.k.transpose(/*dim0=*/1, /*dim1=*/2));
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
