// Lab 12's judge: the checks' runs of RowNormFp32 and MatMulAutocast, and their float64 references.
// Each runs where a missing guard shows, against float64 in closed form from the very inputs it got, computed
// here so that nothing in the learner's amp.cpp can move them; lab.cpp reports what they found as its checks.
#include "judge.h"

#include <algorithm>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "lab/libtorch.h"

namespace lab12::judge {

void record_refusal(Out& o, const std::exception& e) {
  const std::string what = e.what();
  o.error = what.substr(0, std::min(what.find('\n'), what.find(", but")));  // up to libtorch's details
  o.no_custom_fwd = o.error.find("amp::CustomBwd: ") != std::string::npos;
}

namespace {

// The row norm on h as autocast to h's dtype hands it over, h a leaf so that only the function's own
// backward runs between the loss and h.grad.
Out norm_on_leaf(const Functions& fns, const torch::Tensor& h16) {
  const auto leaf = h16.detach().clone().requires_grad_(true);
  Out o;
  {
    amp::Autocast ac(leaf.device(), leaf.scalar_type());
    o.value = fns.norm(leaf);
  }
  try {
    o.value.sum().backward();
    o.grad = leaf.grad();
  } catch (const std::exception& e) {
    record_refusal(o, e);
  }
  return o;
}

// The matmul with forward outside autocast and backward inside an fp16 autocast region, as a backward
// called within autocast runs: CustomBwd must give backward forward's state (off).
Out mm_backward_in_autocast(const Functions& fns, const torch::Tensor& a, const torch::Tensor& b) {
  const auto la = a.detach().clone().requires_grad_(true), lb = b.detach().clone().requires_grad_(true);
  Out o;
  o.value = fns.mm(la, lb);
  try {
    amp::Autocast ac(a.device(), torch::kHalf);
    o.value.sum().backward();
    o.grad = torch::cat({la.grad().flatten(), lb.grad().flatten()});
  } catch (const std::exception& e) {
    record_refusal(o, e);
  }
  return o;
}

// float64's row norms of h and their gradients d sum(n) / dh, in closed form.
Out norm_reference(const torch::Tensor& h_in) {
  const auto h = h_in.to(torch::kDouble), n = h.pow(2).sum(/*dim=*/1).sqrt();
  return {.value = n, .grad = h / n.unsqueeze(1)};
}

}  // namespace

CheckedRuns checked_runs(const Functions& fns, const torch::Tensor& x, const torch::Tensor& w,
                         const torch::Tensor& a, const torch::Tensor& b) {
  CheckedRuns r;
  torch::Tensor h16;
  {
    amp::Autocast ac(x.device(), torch::kHalf);
    h16 = x.mm(w);  // fp16, as autocast's mm hands it on
  }
  r.leaf_norm = norm_on_leaf(fns, h16);
  r.leaf_norm_ref = norm_reference(h16);
  r.mm_state = mm_backward_in_autocast(fns, a, b);
  const auto ones = torch::ones({a.size(0), a.size(1)}, torch::dtype(torch::kDouble).device(x.device()));
  r.mm_state_ref = {.value = a.to(torch::kDouble).mm(b.to(torch::kDouble)),
                    .grad = torch::cat({ones.mm(b.to(torch::kDouble).t()).flatten(),
                                        a.to(torch::kDouble).t().mm(ones).flatten()})};
  // bf16 autocast, the other 16-bit type: RowNormFp32 must compute in fp32 from a bf16 h too, and
  // MatMulAutocast follow autocast to bf16 (a cast_inputs of fp16 gives fp16 here, and fp16 under fp16).
  r.bf16 = !x.device().is_cuda() || amp::cuda_supports_bf16();
  if (r.bf16) {
    torch::Tensor h_bf16;
    {
      amp::Autocast ac(x.device(), torch::kBFloat16);
      h_bf16 = x.mm(w);
      r.mm_bf16_dtype = fns.mm(a, b).scalar_type();
    }
    r.leaf_norm_bf16 = norm_on_leaf(fns, h_bf16);
    r.leaf_norm_bf16_ref = norm_reference(h_bf16);
  }
  return r;
}

}  // namespace lab12::judge
