#include "amp/clip.h"

#include <cmath>
#include <optional>
#include <string>

#include <sstream>

namespace amp {

namespace {

[[noreturn]] void fail(const std::string& why) {
  throw ClipError("clip_grad_norm_sharded", why);
}

}  // namespace

torch::Tensor clip_grad_norm_sharded(const std::vector<torch::Tensor>& params, double max_norm,
                                     const c10::intrusive_ptr<c10d::Backend>& group,
                                     std::chrono::milliseconds timeout) {
  if (!std::isfinite(max_norm) || max_norm <= 0) {
    std::ostringstream why;  // the amp library links no fmt (see src/CMakeLists.txt)
    why << "max_norm must be finite and > 0, got " << max_norm;
    fail(why.str());
  }
  torch::NoGradGuard no_grad;  // the gradients are scaled as data, as an optimizer's step does
  std::vector<torch::Tensor> grads;
  std::optional<torch::Device> device;
  for (const auto& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const torch::Tensor& g = p.grad();
    if (device && g.device() != *device)
      fail("the gradients are on more than one device (" + device->str() + " and " + g.device().str() + ")");
    device = g.device();
    grads.push_back(g);
  }
  const torch::Device where = device.value_or(torch::Device(torch::kCPU));
  // Each tensor's norm in its own dtype, then the squares summed in float64: this rank's share of norm^2.
  torch::Tensor squared = torch::zeros({1}, torch::TensorOptions().dtype(torch::kDouble).device(where));
  for (const auto& g : grads) squared += torch::linalg_vector_norm(g, /*ord=*/2).to(torch::kDouble).square();
  if (group) {
    std::vector<torch::Tensor> tensors{squared};
    try {
      auto work = group->allreduce(tensors, c10d::AllreduceOptions{});  // ReduceOp::SUM
      if (!work->wait(timeout)) fail("the all-reduce of the squared norms timed out");
    } catch (const ClipError&) {
      throw;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fail("the all-reduce of the squared norms failed (a rank died or hangs?): " +
           what.substr(0, what.find('\n')));
    }
  }
  const torch::Tensor norm = squared.sqrt().to(torch::kFloat).reshape({});
  // PyTorch's factor, in fp32; 1 (nothing changes) when the norm is inf or NaN.
  const torch::Tensor factor =
      torch::where(torch::isfinite(norm), (max_norm / (norm + 1e-6)).clamp_max(1.0), torch::ones_like(norm));
  for (auto& g : grads) g.mul_(factor.to(g.dtype()));
  return norm;
}

}  // namespace amp
