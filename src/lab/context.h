// What every lab is given: where to run, which 16-bit type to use, the seed, and how hard to try.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// ATen's tensor and c10's device and dtype, not <torch/types.h>: 2.7 s of compile where that takes 11.6 s
// (all of ATen), and every unit of the lab framework includes this header. torch::Tensor is at::Tensor.
#include <ATen/core/Tensor.h>

namespace lab {

struct Context {
  at::Device device = at::kCPU;
  at::ScalarType dtype = at::kBFloat16;  // the 16-bit type, for labs where one applies
  // True when the user named the dtype (--dtype); false when `dtype` is the device's default. A lab whose
  // question is about one format (lab 01: FP16) uses that format unless a dtype was asked for.
  bool dtype_given = false;
  uint64_t seed = 0;
  bool quick = false;  // tests: smallest sizes that still show the effect, about a second on a CPU
  // Counterfactual: remove the cause of the lab's effect (say, keep fp32 where the lab stores fp16).
  // The lab's checks should then fail; tests run it to prove the checks can fail.
  bool flip = false;

  bool cuda() const { return device.is_cuda(); }
  // Pick a size: `cpu` on the CPU, `cuda` on a GPU, `quick` in quick mode (quick wins).
  int64_t size(int64_t cpu, int64_t cuda, int64_t quick_size) const {
    return quick ? quick_size : (device.is_cuda() ? cuda : cpu);
  }
};

// "fp16", "bf16", "fp32", "fp64": the short names the labs print.
std::string short_name(at::ScalarType dtype);

// "fp16, fp32": the short names of the tensors' dtypes, in order.
std::string short_names(const std::vector<at::Tensor>& tensors);

// fp16 or bf16.
inline bool is_16bit(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16;
}

}  // namespace lab
