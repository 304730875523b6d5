#include "lab/teacher_student.h"

#include <cmath>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

namespace lab {

torch::nn::Sequential copy_of(const torch::nn::Sequential& m, torch::ScalarType dtype) {
  auto c = torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
  c->to(dtype);
  return c;
}

torch::Tensor flat(const torch::nn::Sequential& m) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : m->parameters()) parts.push_back(p.detach().to(torch::kDouble).flatten());
  return torch::cat(parts);
}

torch::nn::Sequential mlp_with(const std::vector<torch::Tensor>& p) {
  torch::nn::Sequential m(torch::nn::Linear(p[0].size(1), p[0].size(0)), torch::nn::Tanh(),
                          torch::nn::Linear(p[2].size(1), p[2].size(0)));
  torch::NoGradGuard no_grad;
  m->to(p[0].device());
  const auto params = m->parameters();  // w1, b1, w2, b2
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(p[i]);
  return m;
}

TeacherStudent draw_teacher_student(torch::Device dev, int64_t in, int64_t hidden, int64_t out,
                                    torch::IntArrayRef batch) {
  const auto o = torch::device(dev);
  TeacherStudent d{.start = {torch::randn({hidden, in}, o) / std::sqrt(double(in)), torch::zeros({hidden}, o),
                             torch::randn({out, hidden}, o) / std::sqrt(double(hidden)),
                             torch::zeros({out}, o)}};
  for (const auto& t : d.start) d.teacher.push_back(torch::empty_like(t).normal_());
  d.x = torch::randn(batch, o);
  return d;
}

}  // namespace lab
