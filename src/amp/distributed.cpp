#include "amp/distributed.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

// Compiled with USE_C10D_GLOO (src/CMakeLists.txt): without it this header declares nothing.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

// NCCL only with a CUDA LibTorch (c10/cuda/impl/cuda_cmake_macros.h exists only there) and every header
// c10d's NCCL header pulls in: nccl.h and, through ATen/cuda/CUDAContext.h, cuBLAS, cuSPARSE and cuSOLVER.
// A pip torch's CUDA build may lack the math headers; the library then builds without NCCL.
#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>) && __has_include(<nccl.h>) && \
    __has_include(<cublas_v2.h>) && __has_include(<cublasLt.h>) && __has_include(<cusparse.h>) && \
    __has_include(<cusolverDn.h>)
#define AMP_LAB_WITH_NCCL 1
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL  // ProcessGroupNCCL is declared only under it (libtorch_cuda defines it)
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define AMP_LAB_WITH_NCCL 0
#endif

namespace amp {
namespace {

class ProcessGroupReducer final : public FoundInfReducer {
 public:
  ProcessGroupReducer(c10::intrusive_ptr<c10d::Backend> group, std::chrono::milliseconds timeout)
      : group_(std::move(group)), timeout_(timeout) {
    if (!group_) throw GradScalerError("found_inf_all_reduce", "the process group is null");
  }

  void all_reduce(std::vector<std::pair<torch::Device, torch::Tensor>>& found_inf_per_device,
                  torch::Device scaler_device) override {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<std::pair<torch::Tensor, torch::Tensor>> copied_back;  // (CPU flag, its copy on the device)
    for (auto& [device, found_inf] : found_inf_per_device) {
      std::vector<torch::Tensor> tensors{found_inf};
      if (!scaler_device.is_cpu() && found_inf.device().is_cpu()) {
        tensors[0] = found_inf.to(scaler_device);
        copied_back.emplace_back(found_inf, tensors[0]);
      }
      works.push_back(group_->allreduce(tensors, c10d::AllreduceOptions{}));  // ReduceOp::SUM
    }
    for (auto& work : works) {
      try {
        if (!work->wait(timeout_))
          throw GradScalerError("GradScaler", "the all-reduce of found_inf across ranks timed out");
      } catch (const GradScalerError&) {
        throw;
      } catch (const std::exception& e) {
        std::string what = e.what();
        throw GradScalerError("GradScaler",
                              "the all-reduce of found_inf across ranks failed (a rank died or hangs?): " +
                                  what.substr(0, what.find('\n')));
      }
    }
    for (auto& [cpu_flag, on_device] : copied_back) cpu_flag.copy_(on_device);
  }

 private:
  c10::intrusive_ptr<c10d::Backend> group_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<FoundInfReducer> found_inf_all_reduce(c10::intrusive_ptr<c10d::Backend> group,
                                                      std::chrono::milliseconds timeout) {
  return std::make_shared<ProcessGroupReducer>(std::move(group), timeout);
}

c10::intrusive_ptr<c10d::Backend> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size, const std::string& hostname,
                                                  std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!hostname.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  } else if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else {  // this machine's hostname, else loopback: what torch.distributed does
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

bool nccl_built() {
  return AMP_LAB_WITH_NCCL != 0;
}

c10::intrusive_ptr<c10d::Backend> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size, std::chrono::milliseconds timeout) {
#if AMP_LAB_WITH_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#else
  (void)store, (void)rank, (void)world_size, (void)timeout;
  throw Error("make_nccl_group",
              "this build of amp_lab has no NCCL (a CPU-only LibTorch, or nccl.h or the CUDA "
              "math headers were missing when it was compiled)");
#endif
}

}  // namespace amp
