// amp::GradScaler across processes: the global inf/NaN verdict that sharded training needs
// (PyTorch's ShardedGradScaler, torch/distributed/fsdp/sharded_grad_scaler.py).
//
// With ZeRO/FSDP-style sharding each rank unscales only the gradients it owns, so an inf in one rank's
// shard is invisible to the others: they would step while that rank skips, and their loss scales would
// part ways. Give the scaler the process group and every found_inf is summed over the ranks right after
// unscaling, before step() decides and update() backs off:
//
//   auto pg = amp::make_gloo_group(store, rank, world_size);           // or any c10d::Backend (NCCL...)
//   amp::GradScaler scaler(device, {.found_inf_reducer = amp::found_inf_all_reduce(pg)});
//
// DDP does not need it: its gradients are all-reduced before unscaling, so every rank already sees every
// inf. This header needs c10d's Backend/Store headers (in LibTorch), not Gloo's or NCCL's; grad_scaler.h
// needs neither.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "amp/grad_scaler.h"

namespace amp {

// How long a collective may take before it is an error (a rank that died or hangs).
inline constexpr std::chrono::milliseconds kCollectiveTimeout{30000};

// The scaler's hook (GradScalerOptions::found_inf_reducer), backed by `group`: each found_inf is all-reduced
// (SUM) over the group inside GradScaler::unscale_(), which waits for it, at most `timeout` (then throws
// GradScalerError, an amp::Error); a collective of one 0-dim fp32 tensor per device holding gradients. A CPU
// flag is moved to the scaler's device for the collective and copied back, as in Python (NCCL takes only CUDA
// tensors).
std::shared_ptr<FoundInfReducer> found_inf_all_reduce(c10::intrusive_ptr<c10d::Backend> group,
                                                      std::chrono::milliseconds timeout = kCollectiveTimeout);

// A Gloo process group (CPU tensors) over `store`, its sockets bound to `hostname`, an address of this
// machine ("127.0.0.1" for ranks on one machine); empty: the interface GLOO_SOCKET_IFNAME names, else
// this machine's hostname, as torch.distributed does. Every collective fails after `timeout`.
c10::intrusive_ptr<c10d::Backend> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size, const std::string& hostname = "127.0.0.1",
                                                  std::chrono::milliseconds timeout = kCollectiveTimeout);

// Whether this library was compiled with c10d's NCCL backend: against a CUDA LibTorch, with nccl.h and the
// CUDA math headers that c10d's NCCL header includes. False with a CPU-only LibTorch.
bool nccl_built();

// An NCCL process group (CUDA tensors, one GPU per rank: select this rank's device first) over `store`;
// every collective fails after `timeout`. Throws amp::Error when !nccl_built().
c10::intrusive_ptr<c10d::Backend> make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size,
                                                  std::chrono::milliseconds timeout = kCollectiveTimeout);

}  // namespace amp
