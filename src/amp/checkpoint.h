// One file holding model, optimizer and scaler, the C++ form of
//   torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "scaler": s.state_dict()}, path)
//   ckpt = torch.load(path, map_location=device)
#pragma once

#include <optional>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "amp/error.h"
#include "amp/grad_scaler.h"

namespace amp {

// A checkpoint that cannot be applied (missing entry, shape or dtype that does not fit, unreadable file).
struct CheckpointError : Error {
  using Error::Error;
};

// Writes model parameters and buffers, optimizer state and scaler state (GradScaler::save) to one
// torch::serialize archive at `path`, replacing the file. Syncs with the device: tensors are copied to the
// host, and the scaler reads its scale and growth tracker (.item()).
// All or nothing: the archive goes to a new temporary file in the same folder, which is fsynced and then
// renamed over `path` (a symlink at `path` is replaced, not followed). When that fails (a full disk, a
// file-size limit, a folder that does not exist or cannot be written) it throws CheckpointError with one
// line naming the path and the cause ("checkpoint: cannot write ckpt.pt: No space left on device"); the
// temporary file is removed and `path` is left as it was (absent, or the previous checkpoint).
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const GradScaler& scaler);

// All or nothing: the model's entries (names, shapes, dtypes) and the scaler state are checked before
// anything is written, the optimizer is restored if its state does not load; on any error model,
// optimizer and scaler are left as they were and a CheckpointError (or GradScalerError) is thrown.
// map_location: the device every saved tensor is loaded onto (torch.load's map_location), e.g. a
// checkpoint written on a GPU loaded on a CPU machine; nullopt keeps the devices they were saved from.
// The model's parameters move to the device of the loaded tensors, as Module::load does.
void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler, std::optional<torch::Device> map_location = std::nullopt);

}  // namespace amp
