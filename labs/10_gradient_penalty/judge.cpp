// Lab 10's judge: the lab's plain step, and the crafted steps penalty_step is held to.
// The plain step is written here, not taken from amp.cpp, so that a mistake penalty_step makes in every
// precision (create_graph left out, the norm squared) still shows; the crafted steps reach each rule on its
// own (a scale that overflows, gradients fp16 loses unscaled).
#include "judge.h"

#include <cstdint>
#include <utility>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/libtorch.h"

namespace lab10::judge {

double norm_of(const std::vector<torch::Tensor>& grads, torch::ScalarType dtype) {
  torch::Tensor sum_sq = torch::zeros({}, torch::TensorOptions().dtype(dtype));
  for (const auto& g : grads) sum_sq = sum_sq + g.detach().to(dtype).pow(2).sum();
  return sum_sq.sqrt().item<double>();
}

Step reference_step(torch::nn::Sequential& model, torch::optim::Optimizer& opt, bool with_penalty,
                    const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  const torch::Tensor loss = torch::mse_loss(model->forward(x), y);
  const auto grads = torch::autograd::grad({loss}, model->parameters(), /*grad_outputs=*/{},
                                           /*retain_graph=*/true, /*create_graph=*/true);
  torch::Tensor sum_sq = torch::zeros({}, loss.options());
  for (const auto& g : grads) sum_sq = sum_sq + g.pow(2).sum();
  const torch::Tensor penalty = sum_sq.sqrt();
  (with_penalty ? loss + penalty : loss).backward();
  opt.step();
  return {loss.item<double>(), penalty.item<double>(), true};
}

torch::Tensor loss_only_update(const Setup& s, double lr) {
  torch::nn::Sequential m = copy_of(s.start, torch::kDouble);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(lr));
  const torch::Tensor before = flat(m);
  reference_step(m, opt, /*with_penalty=*/false, s.x.to(torch::kDouble), s.y.to(torch::kDouble));
  return flat(m) - before;
}

OverflowStep overflow_step(const Setup& s, StepFn step, double lr) {
  OverflowStep o;
  torch::nn::Sequential m = copy_of(s.start);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(lr));
  amp::GradScaler scaler(s.x.device(), {.init_scale = kOverflowScale});
  const torch::Tensor before = flat(m);
  o.stepped = step(m, opt, scaler, /*autocast=*/true, s.x, s.y).stepped;
  const torch::Tensor after = flat(m);
  o.moved = !after.equal(before);
  o.finite = after.isfinite().all().item<bool>();
  return o;
}

namespace {

// The small-gradient batch: the output layer's weights and bias multiplied by kTinyFactor, and targets
// kTinyResidual (times a normal draw) from the model's own float64 outputs, so that dL/d(output), 2 x
// residual / 256 outputs, and every gradient behind it lie below half fp16's smallest subnormal unscaled: a
// penalty step that leaves the scale out (autograd::grad of the loss itself) loses them all, one that scales
// keeps them. The outputs (~1e-4) stay in fp16's normal range, their rounding ~5% of the residual.
Setup tiny_setup(const Setup& s) {
  Setup t{.start = copy_of(s.start), .x = s.x};
  torch::NoGradGuard no_grad;
  auto last = t.start->children().back()->parameters();  // the output Linear: weight, bias
  for (auto& p : last) p.mul_(kTinyFactor);
  const torch::Tensor out64 = copy_of(t.start, torch::kDouble)->forward(s.x.to(torch::kDouble));
  t.y = (out64 + kTinyResidual * torch::randn_like(out64)).to(torch::kFloat);
  return t;
}

// The lab's own fp16 penalty of the unscaled loss (autograd::grad of the loss, no scale): what is left of
// the small gradients without a scale. Also returns the share of the weights' gradients that were zero.
std::pair<double, double> unscaled_fp16_penalty(const Setup& t) {
  torch::nn::Sequential m = copy_of(t.start);
  torch::Tensor loss;
  {
    amp::Autocast ac(t.x.device(), torch::kHalf);
    loss = torch::mse_loss(m->forward(t.x), t.y);
  }
  const auto grads = torch::autograd::grad({loss}, m->parameters());
  int64_t zero = 0, all = 0;
  for (const auto& g : grads) {
    zero += (g == 0).sum().item<int64_t>();
    all += g.numel();
  }
  return {norm_of(grads, torch::kDouble), static_cast<double>(zero) / static_cast<double>(all)};
}

}  // namespace

TinyStep tiny_step(const Setup& s, StepFn step, double lr) {
  TinyStep r;
  const Setup t = tiny_setup(s);
  torch::nn::Sequential ref = copy_of(t.start, torch::kDouble);
  torch::optim::SGD ref_opt(ref->parameters(), torch::optim::SGDOptions(lr));
  const torch::Tensor start = flat(ref);
  const Step want =
      reference_step(ref, ref_opt, /*with_penalty=*/true, t.x.to(torch::kDouble), t.y.to(torch::kDouble));
  const torch::Tensor want_update = flat(ref) - start;

  torch::nn::Sequential m = copy_of(t.start);
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(lr));
  amp::GradScaler scaler(t.x.device(), {.init_scale = kTinyScale});
  const Step got = step(m, opt, scaler, /*autocast=*/true, t.x, t.y);
  const torch::Tensor update = flat(m) - start;
  r.stepped = got.stepped;
  r.ratio = got.penalty / want.penalty;
  r.grad_err = ((update - want_update).norm() / want_update.norm()).item<double>();
  const auto [unscaled, zeroed] = unscaled_fp16_penalty(t);
  r.unscaled_ratio = unscaled / want.penalty;
  r.zeroed = zeroed;
  return r;
}

}  // namespace lab10::judge
