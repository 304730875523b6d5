// Measurements for labs that compare speeds or bytes: a median over timed runs (the device synchronized
// around each), honest words for a speed ratio, the bytes of a set of tensors, the device allocator's peak.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "lab/context.h"

namespace lab {

// `warmup` calls, then the median of `reps` timed runs, in ms per call. A run repeats a fast call
// until it lasts about `min_run_ms` (at most `max_calls` calls), so a small kernel is not timed
// against the clock's and the thread pool's overhead.
double median_ms(const Context& ctx, int warmup, int reps, const std::function<void()>& fn,
                 double min_run_ms = 20, int max_calls = 200);

// "0.60x the speed of fp32 (slower)": a measured ratio of rates, with "faster"/"slower" only outside
// +-5%.
std::string speed_words(double ratio, const std::string& baseline = "fp32");

// numel x element_size summed over the defined tensors: bytes computed from the tensors, not measured.
int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors);

// The most bytes the device's caching allocator held while `fn` ran, above what it held before.
// nullopt on the CPU, whose allocator keeps no statistics (`fn` still runs).
std::optional<int64_t> peak_device_bytes(torch::Device device, const std::function<void()>& fn);

}  // namespace lab
