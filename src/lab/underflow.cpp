#include "lab/underflow.h"

#include <cmath>

#include "amp/autocast.h"
#include "lab/libtorch.h"

namespace lab::underflow {
namespace {

// The weights and biases of an MLP, in order w1, b1, w2, b2, w3, b3: nn.Linear's default init (uniform in
// +-1/sqrt(fan_in)), the output layer's multiplied by `output_gain`.
std::vector<torch::Tensor> draw_mlp(const ProblemOptions& o, double output_gain, torch::Device device) {
  std::vector<torch::Tensor> p;
  auto add_linear = [&](int64_t in, int64_t out, double gain) {
    const double bound = gain / std::sqrt(static_cast<double>(in));
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
    p.push_back(torch::empty({out, in}, opts).uniform_(-bound, bound));
    p.push_back(torch::empty({out}, opts).uniform_(-bound, bound));
  };
  add_linear(o.inputs, o.hidden, 1.0);
  add_linear(o.hidden, o.hidden, 1.0);
  add_linear(o.hidden, o.outputs, output_gain);
  return p;
}

// The MLP with those parameters. Building the Linears draws their default init from the CPU generator;
// its state is put back, so the draws of the problem and of the lab after it do not move.
torch::nn::Sequential make_mlp(const ProblemOptions& o, const std::vector<torch::Tensor>& params,
                               torch::Device device) {
  auto generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor state = generator.get_state();
  torch::nn::Sequential m(torch::nn::Linear(o.inputs, o.hidden), torch::nn::Tanh(),
                          torch::nn::Linear(o.hidden, o.hidden), torch::nn::Tanh(),
                          torch::nn::Linear(o.hidden, o.outputs));
  generator.set_state(state);
  m->to(device);
  torch::NoGradGuard no_grad;
  auto mine = m->parameters();
  for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(params[i]);
  return m;
}

}  // namespace

Problem make_problem(const ProblemOptions& options, torch::Device device) {
  torch::NoGradGuard no_grad;
  Problem p;
  p.options = options;
  const auto teacher = draw_mlp(options, /*output_gain=*/1.0, device);
  p.x = torch::randn({options.batch, options.inputs}, torch::TensorOptions().device(device));
  const auto student = draw_mlp(options, options.output_init, device);
  torch::nn::Sequential t = make_mlp(options, teacher, device);
  const torch::Tensor y = t->forward(p.x);
  p.y = (y * (options.target_std / y.std())).contiguous();
  p.student = make_mlp(options, student, device);
  p.init = student;
  return p;
}

torch::nn::Sequential copy_of(const torch::nn::Sequential& model) {
  return torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(model->clone()));
}

torch::Tensor forward_keeping(torch::nn::Sequential& model, const torch::Tensor& x,
                              std::vector<torch::Tensor>* linear_outputs) {
  torch::Tensor h = x;
  for (auto& layer : *model) {
    h = layer.forward(h);
    if (layer.ptr()->as<torch::nn::Linear>()) {
      h.retain_grad();
      linear_outputs->push_back(h);
    }
  }
  return h;
}

torch::Tensor grads_of(const std::vector<torch::Tensor>& linear_outputs, double scale) {
  std::vector<torch::Tensor> flat;
  for (const auto& a : linear_outputs) flat.push_back(a.grad().detach().to(torch::kDouble).flatten() / scale);
  return torch::cat(flat).cpu();
}

torch::Tensor reference_grads(const Problem& problem, torch::nn::MSELoss loss) {
  torch::nn::Sequential m = copy_of(problem.student);
  m->to(torch::kDouble);
  std::vector<torch::Tensor> outputs;
  loss(forward_keeping(m, problem.x.to(torch::kDouble), &outputs), problem.y.to(torch::kDouble)).backward();
  return grads_of(outputs);
}

double eval_loss(const torch::nn::Sequential& model, const Problem& problem) {
  torch::NoGradGuard no_grad;
  torch::nn::Sequential m = copy_of(model);
  m->to(torch::kDouble);
  return torch::mse_loss(m->forward(problem.x.to(torch::kDouble)), problem.y.to(torch::kDouble))
      .item<double>();
}

bool grads_finite(const torch::nn::Sequential& model) {
  for (const auto& p : model->parameters())
    if (p.grad().defined() && !torch::isfinite(p.grad()).all().item<bool>()) return false;
  return true;
}

double zeroed_share(const torch::Tensor& reference, const torch::Tensor& measured) {
  const torch::Tensor nonzero = reference != 0;
  const double n = nonzero.sum().item<double>();
  return n > 0 ? (nonzero & (measured == 0)).sum().item<double>() / n : 0.0;
}

double cast_zeroed_share(const torch::Tensor& reference, torch::ScalarType dtype) {
  return zeroed_share(reference, reference.to(dtype));
}

// ---- The parameters as plain tensors, for lab 14's FP8 linears -------------------------------------------

namespace {

torch::Tensor forward(const Params& p, const torch::Tensor& x) {
  torch::Tensor h = torch::tanh(torch::linear(x, p[0], p[1]));
  h = torch::tanh(torch::linear(h, p[2], p[3]));
  return torch::linear(h, p[4], p[5]);
}

}  // namespace

Params copy_params(const Params& params, torch::ScalarType dtype) {
  Params out;
  for (const auto& t : params) out.push_back(t.detach().to(dtype).clone().set_requires_grad(true));
  return out;
}

double eval_loss(const Params& params, const Problem& problem) {
  torch::NoGradGuard no_grad;
  Params p64;
  for (const auto& t : params) p64.push_back(t.detach().to(torch::kDouble));
  torch::Tensor out = forward(p64, problem.x.to(torch::kDouble));
  return torch::mse_loss(out, problem.y.to(torch::kDouble)).item<double>();
}

}  // namespace lab::underflow
