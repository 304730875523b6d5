#include "amp/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <system_error>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace amp {
namespace {

// Walks the module as Module::load does (own parameters, own buffers, then serializable children) and
// throws at the first entry that load would not apply cleanly. Reads only: nothing in the model changes.
void validate_module(const torch::nn::Module& module, torch::serialize::InputArchive& archive,
                     const std::string& prefix) {
  auto check = [&](const std::string& key, const torch::Tensor& have, bool is_buffer) {
    torch::Tensor saved;
    if (!archive.try_read(key, saved, is_buffer))
      throw CheckpointError("checkpoint: the model entry '" + prefix + key + "' is missing");
    if (saved.sizes() != have.sizes() || saved.scalar_type() != have.scalar_type()) {
      std::ostringstream msg;
      msg << "checkpoint: the model entry '" << prefix << key << "' is " << saved.scalar_type()
          << saved.sizes() << ", the model has " << have.scalar_type() << have.sizes();
      throw CheckpointError(msg.str());
    }
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(child.key(), child_archive))
      throw CheckpointError("checkpoint: the model entry '" + prefix + child.key() + "' is missing");
    validate_module(*child.value(), child_archive, prefix + child.key() + ".");
  }
}

torch::serialize::InputArchive read_part(torch::serialize::InputArchive& root, const char* name) {
  torch::serialize::InputArchive part;
  if (!root.try_read(name, part)) throw CheckpointError(std::string("checkpoint: no '") + name + "' entry");
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

  auto fail = [&](int error) -> CheckpointError {
    return CheckpointError("checkpoint: cannot write " + path + ": " + std::system_category().message(error));
  };
  // A temporary file beside the target, created exclusively (O_EXCL, and O_NOFOLLOW: nothing planted at its
  // name is followed or reused), then renamed over the target: the path holds the old file or the whole
  // new one, never a part. The name is hidden and unique per process, call and attempt.
  const std::filesystem::path target(path);
  static std::atomic<uint64_t> calls{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    const auto salt = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    temp = (target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()) +
                                    "." + std::to_string(calls++) + "." + std::to_string(salt % 1000000)))
               .string();
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt >= 100)) throw fail(errno);
  }

  // PyTorchStreamWriter, given a file name, a stream or a writer that reports a short write, throws from its
  // destructor when a write fails (std::terminate: "unexpected pos 64 vs 0"). So the writer here always
  // reports every byte taken, keeps the first error, and stops writing after it; the error is raised
  // below, once the archive is done with the writer.
  int error = 0;
  auto writer = [&](const void* data, size_t n) -> size_t {
    const char* p = static_cast<const char*>(data);
    for (size_t left = n; left > 0 && error == 0;) {
      const ssize_t w = ::write(fd, p, left);
      if (w <= 0) {
        if (w == 0)
          error = EIO;  // no progress on a regular file: never loop on it
        else if (errno != EINTR)
          error = errno;
        continue;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    return n;
  };
  auto discard = [&](int cause) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    return fail(cause);
  };
  try {
    root.save_to(writer);
  } catch (const c10::Error& e) {
    ::close(fd);
    ::unlink(temp.c_str());
    const std::string what = e.what_without_backtrace();
    throw CheckpointError("checkpoint: cannot write " + path + ": " + what.substr(0, what.find('\n')));
  }
  if (error != 0) throw discard(error);
  if (::fsync(fd) != 0) throw discard(errno);  // a full disk may only show here (delayed allocation, NFS)
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) throw discard(errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) throw discard(errno);
  // Make the rename itself durable; a folder that cannot be opened or synced (some file systems) leaves the
  // new file in place, which is all a later load needs on a running system.
  const std::string folder = target.has_parent_path() ? target.parent_path().string() : ".";
  if (const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     GradScaler& scaler, std::optional<torch::Device> map_location) {
  torch::serialize::InputArchive root;
  try {
    root.load_from(path, map_location);
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint: cannot read " + path + ": " + e.what_without_backtrace());
  }
  auto m = read_part(root, "model");
  auto o = read_part(root, "optimizer");
  auto s = read_part(root, "scaler");

  // 1. Validate what can be checked without applying it.
  const GradScalerState scaler_state = GradScaler::read_state(s);
  if (scaler.is_enabled() && scaler_state.empty)
    throw GradScalerError(
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
    throw CheckpointError(std::string("checkpoint: the optimizer state does not fit: ") + e.what());
  }

  // 3. Apply the parts already validated.
  model.load(m);
  scaler.load_state_dict(scaler_state);
}

}  // namespace amp
