// Lab 12's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 12.
#pragma once

#include <torch/csrc/autograd/custom_function.h>

namespace lab12 {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Row norms sqrt(sum(h^2)) with a hand-written backward (dh = dn * h / n), computed in fp32 whatever dtype
// h arrives in: under fp16 autocast a row's sum of squares overflows fp16.
struct RowNormFp32 : torch::autograd::Function<RowNormFp32> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor h);
  static variable_list backward(AutogradContext* ctx, variable_list grad);
};

// a.mm(b) with a hand-written backward, following autocast in forward and backward alike, so that backward's
// mm calls meet operands of one dtype.
struct MatMulAutocast : torch::autograd::Function<MatMulAutocast> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b);
  static variable_list backward(AutogradContext* ctx, variable_list grad);
};

}  // namespace lab12
