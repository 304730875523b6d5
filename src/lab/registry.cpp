#include "lab/registry.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "amp_lab_paths.h"

namespace lab {
namespace {

std::vector<LabInfo>& mutable_labs() {
  static std::vector<LabInfo> all;  // function-local: safe from static-initialisation order
  return all;
}

// "/home/x/amp-lab/labs/01_master_weights.cpp" -> "labs/01_master_weights.cpp". ccache (with a base dir)
// may have made __FILE__ relative to the compiler's folder instead: "../labs/01_master_weights.cpp" from
// build/, "../../../home/x/amp-lab/labs/..." from a build folder outside the clone.
std::string relative_source(std::string file) {
  const std::string root = AMP_LAB_SOURCE_DIR "/";
  if (file.rfind(root, 0) == 0) return file.substr(root.size());
  if (!file.empty() && file[0] != '/') {  // Ninja compiles in the build folder
    const std::string resolved =
        (std::filesystem::path(AMP_LAB_BINARY_DIR) / file).lexically_normal().string();
    if (resolved.rfind(root, 0) == 0) return resolved.substr(root.size());
  }
  while (file.rfind("../", 0) == 0) file.erase(0, 3);
  return file;
}

// "labs/01_master_weights/lab.cpp" -> "01_master_weights": a lab is the folder its lab.cpp is in.
std::string stem_of(const std::string& source) {
  const std::filesystem::path file(source);
  if (file.filename() != "lab.cpp") return "";  // not a lab's file: no declaration has an empty stem
  return file.parent_path().filename().string();
}

std::vector<std::string>& mutable_errors() {
  static std::vector<std::string> errors;
  return errors;
}

}  // namespace

Registrar::Registrar(const char* file, LabFn fn) {
  const std::string source = relative_source(file);
  const LabDecl* decl = find_decl(stem_of(source));
  if (!decl || decl->stem() != stem_of(source)) {
    mutable_errors().push_back(source +
                               " has no declaration in labs/catalog.cpp (a lab is labs/NN_<id>/lab.cpp)");
    return;
  }
  Registrar(*decl, file, std::move(fn));
}

Registrar::Registrar(const LabDecl& decl, const char* file, LabFn fn) {
  auto& all = mutable_labs();
  all.push_back({&decl, decl.id, decl.number, decl.title, decl.heading, relative_source(file),
                 decl.executable(), std::move(fn)});
  std::stable_sort(all.begin(), all.end(),
                   [](const LabInfo& a, const LabInfo& b) { return a.question < b.question; });
}

const std::vector<LabInfo>& labs() {
  return mutable_labs();
}
const std::vector<std::string>& registration_errors() {
  return mutable_errors();
}

const LabInfo* find_lab(std::string_view name) {
  const LabDecl* decl = find_decl(name);
  for (const auto& info : labs())
    if (info.decl == decl || (!decl && (info.id == name || std::to_string(info.question) == name)))
      return &info;
  return nullptr;
}

namespace {

// Labs compute on tensors of a few thousand values. On a 2-core CPU shared with other work, OpenMP's
// second thread spins and costs far more than it saves (a 0.4 s lab took 30 s under load), so labs run
// with one intra-op thread on the CPU; the previous setting comes back afterwards.
class CpuThreads {
 public:
  explicit CpuThreads(const Context& ctx) : previous_(at::get_num_threads()) {
    if (!ctx.cuda()) at::set_num_threads(1);
  }
  ~CpuThreads() { at::set_num_threads(previous_); }

 private:
  int previous_;
};

}  // namespace

Report run_lab(const LabInfo& info, const Context& ctx) {
  const CpuThreads threads(ctx);
  at::manual_seed(ctx.seed);
  const auto start = std::chrono::steady_clock::now();
  Report report(info.id, info.title);
  info.fn(ctx, report);
  report.set_identity(info.id, info.title);  // a lab written as one run() made its own Report
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.set_header("Q" + std::to_string(info.question) + " · " + info.source + " · device " +
                    ctx.device.str() + " · seed " + std::to_string(ctx.seed) +
                    (ctx.quick ? " · quick mode" : "") +
                    (ctx.flip ? " · FLIPPED: cause removed, checks expected to fail" : ""));
  report.set_elapsed(elapsed);
  return report;
}

}  // namespace lab
