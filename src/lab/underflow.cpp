#include "lab/underflow.h"

#include <cmath>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "amp/autocast.h"

namespace lab::underflow {
namespace {

// nn.Linear's default init: weight and bias uniform in +-1/sqrt(fan_in).
void add_linear(Params& params, int64_t in, int64_t out, double gain, torch::Device device) {
  const double bound = gain / std::sqrt(static_cast<double>(in));
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  params.push_back(torch::empty({out, in}, opts).uniform_(-bound, bound));
  params.push_back(torch::empty({out}, opts).uniform_(-bound, bound));
}

Params make_mlp(const ProblemOptions& o, double output_gain, torch::Device device) {
  Params p;
  add_linear(p, o.inputs, o.hidden, /*gain=*/1.0, device);
  add_linear(p, o.hidden, o.hidden, /*gain=*/1.0, device);
  add_linear(p, o.hidden, o.outputs, output_gain, device);
  return p;
}

torch::Tensor forward(const Params& p, torch::Tensor x, std::vector<torch::Tensor>* activations) {
  auto keep = [&](torch::Tensor t) {
    if (activations) {
      t.retain_grad();
      activations->push_back(t);
    }
    return t;
  };
  torch::Tensor h = torch::tanh(keep(torch::linear(x, p[0], p[1])));
  h = torch::tanh(keep(torch::linear(h, p[2], p[3])));
  return keep(torch::linear(h, p[4], p[5]));
}

}  // namespace

Problem make_problem(const ProblemOptions& options, torch::Device device) {
  torch::NoGradGuard no_grad;
  Problem p;
  p.options = options;
  const Params teacher = make_mlp(options, /*output_gain=*/1.0, device);
  p.x = torch::randn({options.batch, options.inputs}, torch::TensorOptions().device(device));
  torch::Tensor y = forward(teacher, p.x, nullptr);
  p.y = (y * (options.target_std / y.std())).contiguous();
  p.init = make_mlp(options, options.output_init, device);
  return p;
}

Params copy_params(const Params& params, torch::ScalarType dtype) {
  Params out;
  for (const auto& t : params) out.push_back(t.detach().to(dtype).clone().set_requires_grad(true));
  return out;
}

torch::Tensor loss_of(const Params& params, const Problem& problem, std::vector<torch::Tensor>* activations) {
  const auto dtype = params.front().scalar_type();
  torch::Tensor out = forward(params, problem.x.to(dtype), activations);
  return torch::mse_loss(out, problem.y.to(dtype)) * problem.options.loss_multiplier;
}

double eval_loss(const Params& params, const Problem& problem) {
  torch::NoGradGuard no_grad;
  Params p64;
  for (const auto& t : params) p64.push_back(t.detach().to(torch::kDouble));
  torch::Tensor out = forward(p64, problem.x.to(torch::kDouble), nullptr);
  return torch::mse_loss(out, problem.y.to(torch::kDouble)).item<double>();
}

namespace {

// One forward/backward pass; `scale_loss` turns the loss into what backward() starts from.
template <class ScaleFn>
torch::Tensor activation_grads_impl(const Params& params, const Problem& problem,
                                    std::optional<torch::ScalarType> autocast_dtype, ScaleFn scale_loss) {
  Params p = copy_params(params, autocast_dtype ? torch::kFloat : torch::kDouble);
  std::vector<torch::Tensor> acts;
  torch::Tensor loss;
  {
    amp::Autocast ac(problem.x.device(), autocast_dtype.value_or(torch::kBFloat16),
                     /*enabled=*/autocast_dtype.has_value());
    loss = loss_of(p, problem, &acts);
  }
  const double scale = scale_loss(loss);
  std::vector<torch::Tensor> flat;
  for (const auto& a : acts) flat.push_back(a.grad().detach().to(torch::kDouble).flatten() / scale);
  return torch::cat(flat).cpu();
}

}  // namespace

torch::Tensor activation_grads(const Params& params, const Problem& problem,
                               std::optional<torch::ScalarType> autocast_dtype, double scale) {
  return activation_grads_impl(params, problem, autocast_dtype, [&](const torch::Tensor& loss) {
    (loss * scale).backward();
    return scale;
  });
}

torch::Tensor activation_grads(const Params& params, const Problem& problem, torch::ScalarType autocast_dtype,
                               amp::GradScaler& scaler) {
  return activation_grads_impl(params, problem, autocast_dtype, [&](const torch::Tensor& loss) {
    scaler.scale(loss).backward();
    return scaler.get_scale();
  });
}

double zeroed_share(const torch::Tensor& reference, const torch::Tensor& measured) {
  torch::Tensor nonzero = reference != 0;
  const double n = nonzero.sum().item<double>();
  return n > 0 ? (nonzero & (measured == 0)).sum().item<double>() / n : 0.0;
}

double cast_zeroed_share(const torch::Tensor& reference, torch::ScalarType dtype, double scale) {
  return zeroed_share(reference, (reference * scale).to(dtype));
}

int64_t TrainResult::skipped() const {
  int64_t n = 0;
  for (bool s : stepped) n += !s;
  return n;
}

bool TrainResult::skipped_exactly_overflowed() const {
  for (size_t i = 0; i < stepped.size(); ++i)
    if (stepped[i] == overflowed[i]) return false;  // stepped despite an overflow, or skipped without one
  return true;
}

TrainResult train(const Problem& problem, const TrainOptions& options) {
  const torch::Device device = problem.x.device();
  TrainResult r;
  r.params = copy_params(problem.init);
  torch::optim::Adam optimizer(r.params, torch::optim::AdamOptions(options.lr));
  std::optional<amp::GradScaler> scaler;
  if (options.scaler) scaler.emplace(device, *options.scaler);

  for (int64_t step = 0; step < options.steps; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast ac(device, options.autocast.value_or(torch::kBFloat16), /*enabled=*/options.autocast.has_value());
      loss = loss_of(r.params, problem);
    }
    r.scale.push_back(scaler ? scaler->get_scale() : 1.0);
    (scaler ? scaler->scale(loss) : loss).backward();
    // The independent overflow check: look at the (still scaled) gradients before the scaler does.
    bool finite = true;
    for (const auto& p : r.params) finite = finite && torch::isfinite(p.grad()).all().item<bool>();
    r.overflowed.push_back(!finite);
    if (scaler) {
      r.stepped.push_back(scaler->step(optimizer));
      scaler->update();
    } else {
      optimizer.step();
      r.stepped.push_back(true);
    }
    r.loss.push_back(loss.item<double>() / problem.options.loss_multiplier);
  }
  r.final_loss = eval_loss(r.params, problem);
  return r;
}


}  // namespace lab::underflow
