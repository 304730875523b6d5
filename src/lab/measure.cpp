#include "lab/measure.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

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

}  // namespace lab
