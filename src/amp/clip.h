// amp::clip_grad_norm_sharded: gradient clipping by the global norm, for gradients whole on one process or
// sharded over the ranks of a c10d process group (ZeRO/FSDP style), under a GradScaler.
//
// Clipping needs the true gradients, so under AMP it comes after scaler.unscale_(opt) (PyTorch's AMP
// examples, "Gradient clipping"). With sharded gradients each rank holds only part of them: the clip factor
// must come from the norm of all of them, the square root of the all-reduced sum of the ranks' squared shard
// norms, so that every rank scales its shard by the same factor, the one an unsharded run would use
// (FSDP's clip_grad_norm_, torch/distributed/fsdp/fully_sharded_data_parallel.py). Clipping each shard by
// its own norm changes the update, and the update then depends on how many ranks there are.
//
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);                                                // the true gradients, in place
//   amp::clip_grad_norm_sharded(shard_params, max_norm, pg);           // the same factor on every rank
//   scaler.step(opt);                                                    // skipped on an inf anywhere
//   scaler.update();                                                     //   (with found_inf_reducer set)
//
// The factor is PyTorch's, min(1, max_norm / (norm + 1e-6)), computed in fp32. The squared norms are summed
// in float64 (each tensor's 2-norm in its own dtype first, as torch::nn::utils::clip_grad_norm_ does), so
// the sum neither overflows nor depends on the order the ranks add up in beyond float64's rounding.
//
// A global norm that is inf or NaN leaves every gradient untouched: clipping an inf would turn it into NaN
// (inf * 0) and hide where it came from. Every rank sees the same global norm, so every rank can skip alike;
// a GradScaler given the process group (amp/distributed.h) skips the step on every rank by itself.
//
// Syncs: one all-reduce of one float64 value over `group` (when given), waited for at most `timeout`; no
// value is read back to the host (the factor is applied on the gradients' device, and the returned norm
// stays there). Every rank of the group must call it, also a rank whose shard has no gradients.
#pragma once

#include <chrono>
#include <vector>

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "amp/distributed.h"
#include "amp/error.h"

namespace amp {

// A call clip_grad_norm_sharded refuses, or a collective that failed, in one line
// ("amp::clip_grad_norm_sharded: max_norm must be finite and > 0, got -1").
struct ClipError : Error {
  using Error::Error;
};

// Scales, in place, the gradients of `params` (this rank's shard; a parameter without a gradient is left
// out) by min(1, max_norm / (norm + 1e-6)), where norm is the 2-norm of the gradients of every rank of
// `group` (`params` alone when group is null: torch::nn::utils::clip_grad_norm_'s result). Returns that
// norm, a 0-dim fp32 tensor on the gradients' device (the CPU when this rank has none). A non-finite norm
// changes no gradient (see above).
// Throws ClipError when max_norm is not finite and positive, when the gradients are on more than one device,
// or when the all-reduce fails or takes longer than `timeout` (a rank died or hangs).
torch::Tensor clip_grad_norm_sharded(const std::vector<torch::Tensor>& params, double max_norm,
                                     const c10::intrusive_ptr<c10d::Backend>& group = {},
                                     std::chrono::milliseconds timeout = kCollectiveTimeout);

}  // namespace amp
