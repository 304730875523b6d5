// One file holding model, optimizer and scaler, the C++ form of
//   torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "scaler": s.state_dict()}, path)
#pragma once

#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "amp/grad_scaler.h"

namespace amp {

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const GradScaler& scaler);
void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler);

}  // namespace amp
