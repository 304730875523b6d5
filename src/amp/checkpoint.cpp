#include "amp/checkpoint.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace amp {

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const GradScaler& scaler) {
  torch::serialize::OutputArchive root, m, o, s;
  model.save(m);
  optimizer.save(o);
  scaler.save(s);
  root.write("model", m);
  root.write("optimizer", o);
  root.write("scaler", s);
  root.save_to(path);
}

void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler) {
  torch::serialize::InputArchive root, m, o, s;
  root.load_from(path);
  root.read("model", m);
  root.read("optimizer", o);
  root.read("scaler", s);
  model.load(m);
  optimizer.load(o);
  scaler.load(s);
}

}  // namespace amp
