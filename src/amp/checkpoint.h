// One file holding model, optimizer and scaler, the C++ form of
//   torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "scaler": s.state_dict()}, path)
#pragma once

#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace amp {

// Writes model parameters and buffers, optimizer state and scaler state (GradScaler::save) to one
// torch::serialize archive at `path`, replacing the file. Syncs with the device: tensors are copied to the
// host, and the scaler reads its scale and growth tracker (.item()). Throws c10::Error (LibTorch's) when
// the file cannot be written.
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const GradScaler& scaler);
// Reads a file written by save_checkpoint back into model, optimizer and scaler, which must be built
// the same way as the saved ones (same parameter names, same optimizer type). Parameters and buffers
// take the saved values (torch::nn::Module::load). Syncs with the device when tensors move to it.
// Throws c10::Error when the file is missing or unreadable or lacks an entry the model, optimizer or
// scaler asks for, and GradScalerError when it holds a disabled scaler's empty state and `scaler` is enabled.
void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler);

}  // namespace amp
