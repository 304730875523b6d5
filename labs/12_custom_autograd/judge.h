// Lab 12's judge (judge.cpp): the checks' runs of the guarded functions and their float64 references.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include <torch/types.h>

namespace lab12::judge {

// One run of a function (the report's shown runs in lab.cpp are such runs too).
struct Out {
  torch::Tensor value, grad;  // the function's output and d(sum)/dw
  std::string error;          // set when backward was refused
  // The refusal was amp::CustomBwd's (what() reads "amp::CustomBwd: ..."): forward made no CustomFwd.
  bool no_custom_fwd = false;
};

// A backward refused: its error's first line into `o`, and whether amp::CustomBwd refused it, which names
// the mistake (a CustomBwd whose forward made no CustomFwd).
void record_refusal(Out& o, const std::exception& e);

// The functions under judgement: RowNormFp32 and MatMulAutocast (--flip: the same without guards).
struct Functions {
  std::function<torch::Tensor(const torch::Tensor&)> norm;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> mm;
};

// The checks' runs: the row norm on an fp16 leaf h and the float64 closed form on that h (value: norms,
// grad: d sum(n) / dh); the matmul with forward outside autocast, backward inside it, and float64's
// gradients (grad: a's and b's, flattened). The same under bf16 autocast, where the device has it (bf16):
// the row norm on a bf16 leaf h and float64's closed form on it; the dtype of the matmul's output.
struct CheckedRuns {
  Out leaf_norm, leaf_norm_ref, mm_state, mm_state_ref;
  bool bf16 = false;
  Out leaf_norm_bf16, leaf_norm_bf16_ref;
  torch::ScalarType mm_bf16_dtype = torch::kFloat;
};

// From the very inputs the functions get: the activations h = x @ w, and part 2's a and b.
CheckedRuns checked_runs(const Functions& fns, const torch::Tensor& x, const torch::Tensor& w,
                         const torch::Tensor& a, const torch::Tensor& b);

}  // namespace lab12::judge
