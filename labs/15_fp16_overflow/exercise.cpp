// Exercise 15: the guard around the op that overflows fp16. This is lab 15's amp.cpp with the guard taken
// out of forward().
//
// Write the guarded branch of forward(): the attention scores q k^T with guard=true. matmul is on
// autocast's lower-precision list, so under fp16 autocast it runs in fp16 whatever dtype its inputs have,
// and these scores (sums of products of large values) pass fp16's largest finite value, 65504: they are inf
// and the loss is NaN. fp32's range holds them. The rest of the forward pass should keep its 16-bit speed:
// only this one op needs fp32.
//
// What the lab (labs/15_fp16_overflow/lab.cpp) measures on your forward with guard=true: the step-0 scores
// are fp32 and equal float64 scores of the same q and k (to fp32's rounding); the other matmuls still run in
// the 16-bit type autocast was asked for (fp16 and bf16); fp16 training with the guard ends at most 10%
// above fp32's loss. Its own unguarded and bf16 runs are context: they show the overflow you are to fix.
//
//   amp-lab check 15    builds this file in place of the lab's amp.cpp and runs the lab's checks on it
//   amp-lab watch 15    the same on every save, until every check holds
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
    // TODO: the scores in fp32, with the rest of forward() still under the caller's autocast. As written
    //       they are the unguarded branch's: an fp16 product that overflows.
    f.scores = torch::matmul(f.q, f.k.transpose(/*dim0=*/1, /*dim1=*/2));
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
