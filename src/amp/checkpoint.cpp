#include "amp/checkpoint.h"

#include <sstream>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "amp/detail/atomic_file.h"

namespace amp {
namespace {

// Walks the module as Module::load does (own parameters, own buffers, then serializable children) and
// throws at the first entry that load would not apply cleanly. Reads only: nothing in the model changes.
void validate_module(const torch::nn::Module& module, torch::serialize::InputArchive& archive,
                     const std::string& prefix) {
  auto check = [&](const std::string& key, const torch::Tensor& have, bool is_buffer) {
    torch::Tensor saved;
    if (!archive.try_read(key, saved, is_buffer))
      throw CheckpointError("checkpoint", "the model entry '" + prefix + key + "' is missing");
    if (saved.sizes() != have.sizes() || saved.scalar_type() != have.scalar_type()) {
      std::ostringstream msg;
      msg << "the model entry '" << prefix << key << "' is " << saved.scalar_type() << saved.sizes()
          << ", the model has " << have.scalar_type() << have.sizes();
      throw CheckpointError("checkpoint", msg.str());
    }
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(child.key(), child_archive))
      throw CheckpointError("checkpoint", "the model entry '" + prefix + child.key() + "' is missing");
    validate_module(*child.value(), child_archive, prefix + child.key() + ".");
  }
}

torch::serialize::InputArchive read_part(torch::serialize::InputArchive& root, const char* name) {
  torch::serialize::InputArchive part;
  if (!root.try_read(name, part)) throw CheckpointError("checkpoint", std::string("no '") + name + "' entry");
  return part;
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const GradScaler& scaler) {
  torch::serialize::OutputArchive root, m, o, s;
  model.save(m);
  optimizer.save(o);
  scaler.save(s);
  root.write("model", m);
  root.write("optimizer", o);
  root.write("scaler", s);

  // The archive streams into amp::detail::AtomicFile: the old checkpoint or the whole new one, never a part.
  // PyTorchStreamWriter, given a file name, a stream or a writer that reports a short write, throws from its
  // destructor when a write fails (std::terminate: "unexpected pos 64 vs 0"). So the writer always reports
  // every byte taken; AtomicFile keeps the first error, skips the writes after it and raises it at commit(),
  // once the archive is done with the writer.
  try {
    detail::AtomicFile file(path);
    try {
      root.save_to([&](const void* data, size_t n) -> size_t {
        file.write(data, n);
        return n;
      });
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      throw CheckpointError("checkpoint", "cannot write " + path + ": " + what.substr(0, what.find('\n')));
    }
    file.commit();
  } catch (const detail::AtomicFileError& e) {
    throw CheckpointError("checkpoint", e.what());
  }
}

void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler, std::optional<torch::Device> map_location) {
  torch::serialize::InputArchive root;
  try {
    root.load_from(path, map_location);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint", "cannot read " + path + ": " + e.what_without_backtrace());
  }
  auto m = read_part(root, "model");
  auto o = read_part(root, "optimizer");
  auto s = read_part(root, "scaler");

  // 1. Validate what can be checked without applying it.
  const GradScalerState scaler_state = GradScaler::read_state(s);
  if (scaler.is_enabled() && scaler_state.empty)
    throw GradScalerError("GradScaler",
                          "The source state dict is empty, possibly because it was saved from a disabled "
                          "instance of GradScaler.");
  validate_module(model, m, "");

  // 2. The optimizer's format can only be checked by loading it: keep its state to put back on failure.
  torch::serialize::OutputArchive backup;
  optimizer.save(backup);
  try {
    optimizer.load(o);
  } catch (const std::exception& e) {
    std::stringstream buffer;
    backup.save_to(buffer);
    torch::serialize::InputArchive restore;
    restore.load_from(buffer);
    // load() assigns per-parameter state and options group by group, and only adds entries: drop what the
    // failed load added before putting the saved state back.
    optimizer.state().clear();
    optimizer.load(restore);
    throw CheckpointError("checkpoint", std::string("the optimizer state does not fit: ") + e.what());
  }

  // 3. Apply the parts already validated.
  model.load(m);
  scaler.load_state_dict(scaler_state);
}

}  // namespace amp
