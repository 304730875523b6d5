// Lab 13's judge (judge.cpp): the lab's own DDP step, which the sharded runs of amp.cpp's code are held to.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/nn/modules/container/sequential.h>

#include "amp/grad_scaler.h"

namespace c10d {
class Backend;
}

namespace lab13::judge {

// amp.cpp's forward_backward for DDP, written here: forward under fp16 autocast, then the scaled backward.
void reference_forward_backward(torch::nn::Sequential& model, amp::GradScaler& scaler, const torch::Tensor& x,
                                const torch::Tensor& y);

// amp.cpp's all_reduce_gradients for DDP, written here: every gradient all-reduced in one flat bucket and
// averaged over the ranks.
void reference_all_reduce(torch::nn::Sequential& model, const c10::intrusive_ptr<c10d::Backend>& pg);

}  // namespace lab13::judge
