#include "lab/measure.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <thread>
#include <vector>

#include <unistd.h>

#include <ATen/Context.h>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>
#include <torch/torch.h>
#include <torch/utils.h>

#include "lab/report.h"

namespace lab {
namespace {

void sync(const Context& ctx) {
  if (ctx.cuda()) torch::cuda::synchronize();
}

double elapsed_ms(const Context& ctx, int calls, const std::function<void()>& fn) {
  sync(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  sync(ctx);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double median_ms(const Context& ctx, int warmup, int reps, const std::function<void()>& fn, double min_run_ms,
                 int max_calls) {
  double one = 0;
  for (int i = 0; i < warmup; ++i) one = elapsed_ms(ctx, 1, fn);
  const int calls = std::clamp(static_cast<int>(min_run_ms / std::max(one, 1e-3)), 1, max_calls);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(elapsed_ms(ctx, calls, fn) / calls);
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

std::string speed_words(double ratio, const std::string& baseline) {
  const std::string base = num(ratio, 3) + "x the speed of " + baseline;
  if (ratio > 1.05) return base + " (faster)";
  if (ratio < 0.95) return base + " (slower)";
  return base + " (about the same)";
}

int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  return n;
}

std::optional<int64_t> peak_device_bytes(torch::Device device, const std::function<void()>& fn) {
  if (device.is_cpu()) {
    fn();
    return std::nullopt;
  }
  // Device-generic (c10), so this compiles against a CPU-only LibTorch and needs no CUDA header.
  const c10::DeviceIndex index =
      device.has_index() ? device.index() : c10::impl::getDeviceGuardImpl(device.type())->getDevice().index();
  c10::DeviceAllocator* allocator = c10::getDeviceAllocator(device.type());
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const int64_t before = allocator->getDeviceStats(index).allocated_bytes[kAll].current;
  allocator->resetPeakStats(index);
  fn();
  if (device.is_cuda()) torch::cuda::synchronize();
  return allocator->getDeviceStats(index).allocated_bytes[kAll].peak - before;
}

double max_rel_error(const torch::Tensor& y, const torch::Tensor& ref) {
  const torch::Tensor r = ref.to(torch::kDouble);
  return ((y.detach().to(torch::kDouble) - r).abs().max() / r.abs().max()).item<double>();
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  const torch::Tensor ta = torch::tensor(a, torch::kDouble), tb = torch::tensor(b, torch::kDouble);
  if (!torch::isfinite(ta).all().item<bool>()) return std::numeric_limits<double>::infinity();  // diverged
  return max_rel_error(ta, tb);
}

bool parameters_equal(const torch::nn::Module& a, const torch::nn::Module& b, double* max_diff) {
  bool equal = true;
  auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    equal = equal && torch::equal(pa[i], pb[i]);
    *max_diff = std::max(*max_diff, (pa[i] - pb[i]).abs().max().item<double>());
  }
  return equal;
}

std::string scratch_path(const std::string& stem, const std::string& ext) {
  return (std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ext)).string();
}

std::vector<torch::Tensor> grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad());
  return g;
}

int64_t adam_state_bytes(const std::vector<torch::Tensor>& params, double learning_rate) {
  torch::optim::Adam adam(params, torch::optim::AdamOptions(learning_rate));
  adam.step();
  int64_t n = 0;
  for (const auto& [key, state] : adam.state()) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*state);
    n += tensor_bytes({s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()});
  }
  return n;
}

std::string mb_cell(std::optional<int64_t> bytes) { return !bytes || *bytes == 0 ? "-" : num(*bytes / 1e6, 3); }

double matmul_rate(const Context& ctx, int64_t n, torch::ScalarType in, torch::ScalarType compute, int warmup,
                   int reps, double unit) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(ctx.device);
  const auto a = torch::randn({n, n}, f32).to(in), b = torch::randn({n, n}, f32).to(in);
  const double ms = median_ms(ctx, warmup, reps, [&] { torch::mm(a.to(compute), b.to(compute)).to(in); });
  return flop_rate(2.0 * n * n * n, ms, unit);
}

std::string cpu_threads_note() {
  return "CPU timings on " + std::to_string(torch::get_num_threads()) + " of " +
         std::to_string(std::thread::hardware_concurrency()) + " cores";
}

KeepTf32::KeepTf32() : before(at::globalContext().allowTF32CuBLAS()) {}
KeepTf32::~KeepTf32() { at::globalContext().setAllowTF32CuBLAS(before); }

}  // namespace lab
