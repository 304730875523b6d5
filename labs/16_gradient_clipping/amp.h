// Lab 16's AMP code, as lab.cpp calls it: amp.cpp defines it, and so does your file in exercise 16.
#pragma once

#include <vector>

#include <c10/util/intrusive_ptr.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace c10d {
class Backend;
}

namespace lab16 {

// The scaler clip_and_step steps through, from init_scale. With a group (sharded gradients) it is given
// amp::found_inf_all_reduce(group): an inf in any rank's shard then skips the step on every rank, which
// clip_and_step relies on. Null group: one process, a plain scaler.
amp::GradScaler make_scaler(torch::Device device, double init_scale,
                            const c10::intrusive_ptr<c10d::Backend>& group);

// Forward under fp16 autocast, then the scaled backward: every parameter's gradient, times the scale.
void forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                      const torch::Tensor& y);

// The rest of the step: the gradients of `shard` (the parameters `opt` steps, this rank's) clipped to a
// 2-norm of at most max_norm over every rank of `group` (null: `shard` is the whole model, on one process),
// then the step and the update, through a scaler from make_scaler(..., group). Returns the global norm of
// the true gradients before the clip (0-dim fp32; inf or NaN when some rank's gradients overflowed, and the
// step was then skipped on every rank).
torch::Tensor clip_and_step(torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                            const std::vector<torch::Tensor>& shard, double max_norm,
                            const c10::intrusive_ptr<c10d::Backend>& group);

}  // namespace lab16
