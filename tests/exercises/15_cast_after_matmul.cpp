// A wrong solution kept by the tests (tests/test_exercises.cpp): lab 15's amp.cpp with the scores cast to
// float after the matmul: the matmul still runs in fp16 and overflows, and the cast keeps the inf.
//
// expect-hint: cast-after-matmul
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
    // the mistake: the matmul under autocast (fp16, inf), its result cast to float
    f.scores = torch::matmul(f.q, f.k.transpose(/*dim0=*/1, /*dim1=*/2)).to(torch::kFloat);
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
