#include "lab/registry.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/utils.h>

#include "amp_lab_paths.h"

namespace lab {
namespace {

std::vector<LabInfo>& mutable_labs() {
  static std::vector<LabInfo> all;  // function-local: safe from static-initialisation order
  return all;
}

// "/home/x/amp-lab/labs/01_master_weights.cpp" -> "labs/01_master_weights.cpp". ccache (with a base dir)
// may have made __FILE__ relative to the build folder instead: "../labs/01_master_weights.cpp".
std::string relative_source(std::string file) {
  const std::string root = AMP_LAB_SOURCE_DIR "/";
  if (file.rfind(root, 0) == 0) return file.substr(root.size());
  while (file.rfind("../", 0) == 0) file.erase(0, 3);
  return file;
}

std::string executable_name(const std::string& source) {
  auto slash = source.rfind('/');
  std::string stem = source.substr(slash == std::string::npos ? 0 : slash + 1);
  stem = stem.substr(0, stem.rfind('.'));
  return "lab" + stem;
}

}  // namespace

Registrar::Registrar(std::string id, int question, std::string title, std::string heading, const char* file,
                     LabFn fn, std::vector<std::string> provides) {
  auto& all = mutable_labs();
  std::string source = relative_source(file);
  all.push_back({std::move(id), question, std::move(title), std::move(heading), source, executable_name(source), fn,
                 std::move(provides)});
  std::stable_sort(all.begin(), all.end(), [](const LabInfo& a, const LabInfo& b) { return a.question < b.question; });
}

const std::vector<LabInfo>& labs() { return mutable_labs(); }

const LabInfo* find_lab(std::string_view name) {
  for (const auto& info : labs())
    if (info.id == name || info.executable == name || std::to_string(info.question) == name ||
        info.executable == "lab" + std::string(name))
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
  torch::manual_seed(ctx.seed);
  const auto start = std::chrono::steady_clock::now();
  Report report = info.fn(ctx);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.set_header("Q" + std::to_string(info.question) + " · " + info.source + " · device " + ctx.device.str() +
                    " · seed " + std::to_string(ctx.seed) + (ctx.quick ? " · quick mode" : "") +
                    (ctx.flip ? " · FLIPPED: cause removed, checks expected to fail" : ""));
  report.set_elapsed(elapsed);
  return report;
}

}  // namespace lab
