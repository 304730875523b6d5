// Measurements for labs that compare speeds or bytes: a median over timed runs (the device synchronized
// around each), honest words for a speed ratio, the bytes of a set of tensors, the device allocator's peak.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "lab/context.h"

namespace lab {

// `warmup` calls, then the median of `reps` timed runs, in ms per call. A run repeats a fast call
// until it lasts about `min_run_ms` (at most `max_calls` calls), so a small kernel is not timed
// against the clock's and the thread pool's overhead.
double median_ms(const Context& ctx, int warmup, int reps, const std::function<void()>& fn,
                 double min_run_ms = 20, int max_calls = 200);

// "0.60x the speed of fp32 (slower)": a measured ratio of rates, with "faster"/"slower" only outside
// +-5%.
std::string speed_words(double ratio, const std::string& baseline = "fp32");

// numel x element_size summed over the defined tensors: bytes computed from the tensors, not measured.
int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors);

// The most bytes the device's caching allocator held while `fn` ran, above what it held before.
// nullopt on the CPU, whose allocator keeps no statistics (`fn` still runs).
std::optional<int64_t> peak_device_bytes(torch::Device device, const std::function<void()>& fn);

// What the device's allocator handed out while `fn` ran, above what was live before it: the most bytes live
// at once, and the bytes still live when it returned (a forward pass: what autograd keeps for backward).
// CUDA: the caching allocator's statistics (its blocks, rounded up to 512 bytes). CPU: a counting wrapper
// around the CPU allocator, installed for the call only: it sees the tensors allocated during `fn`, at
// the sizes asked for, and not memory that oneDNN or a BLAS allocate for themselves.
struct AllocatedBytes {
  int64_t peak = 0;
  int64_t retained = 0;
};
AllocatedBytes allocated_bytes(torch::Device device, const std::function<void()>& fn);

// max |y - ref| / max |ref|, measured in float64 (ref the float64 reference).
double max_rel_error(const torch::Tensor& y, const torch::Tensor& ref);

// max |a - b| / max |b| in float64 (b the reference); infinity when `a` is not finite (a diverged run).
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b);

// Whether the two modules' parameters are bitwise equal, pairwise in order; raises *max_diff to the largest
// |a - b| seen.
bool parameters_equal(const torch::nn::Module& a, const torch::nn::Module& b, double* max_diff);

// A private folder for scratch files: made by mkdtemp as "<TMPDIR>/<stem>_XXXXXX" (TMPDIR unset or empty:
// /tmp), mode 0700, and removed with everything in it however the process leaves it: when the object is
// destroyed (a return or an exception), at exit(), and on SIGINT, SIGTERM or SIGHUP. On those signals the
// handler removes every live ScratchDir, then hands the signal to the handler that was installed before
// (the runner's, which lets the lab finish) or, when there was none, ends the process by the signal as its
// default action would. A signal that was ignored stays ignored. Throws std::runtime_error with one line
// (the folder and the cause) when the folder cannot be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& stem);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A new, empty file `name` (no '/') in the folder, made with O_CREAT|O_EXCL|O_NOFOLLOW: it never opens,
  // follows or truncates something already there. Returns its path; throws std::runtime_error otherwise.
  std::filesystem::path file(const std::string& name) const;

 private:
  std::filesystem::path path_;
  int slot_ = -1;  // its entry in the table the signal handler reads
};

// One scratch file in a ScratchDir of its own, "<TMPDIR>/<stem>_XXXXXX/<stem><ext>", removed with it.
// Converts to the path it names, so it goes where a path string goes:
//   const lab::ScratchFile ckpt("amp_lab_06", ".pt");
//   amp::save_checkpoint(ckpt, ...);  amp::load_checkpoint(ckpt, ...);  std::filesystem::remove(ckpt);
class ScratchFile {
 public:
  ScratchFile(const std::string& stem, const std::string& ext)
      : dir_(stem), path_(dir_.file(stem + ext).string()) {}
  const std::string& string() const { return path_; }
  operator const std::string&() const { return path_; }
  operator std::filesystem::path() const { return path_; }

 private:
  ScratchDir dir_;
  std::string path_;
};

// The gradients of `params` (undefined where a parameter has none), for counting their bytes.
std::vector<torch::Tensor> grads(const std::vector<torch::Tensor>& params);

// Adam's state after one step on `params` (exp_avg and exp_avg_sq per parameter), in bytes.
int64_t adam_state_bytes(const std::vector<torch::Tensor>& params, double learning_rate);

// A byte count as a table cell in MB (3 significant digits); "-" for none or zero.
std::string mb_cell(std::optional<int64_t> bytes);

// flop floating-point operations in `ms` milliseconds, in units of `unit` FLOP/s.
inline double flop_rate(double flop, double ms, double unit) {
  return flop / (ms * 1e-3) / unit;
}

// n x n x n matmuls of seeded-random inputs stored in `in`, multiplied in `compute` (converted there and
// back when the two differ), in `unit` FLOP/s: median_ms of `reps` runs after `warmup`. The inputs are
// made before the clock starts.
double matmul_rate(const Context& ctx, int64_t n, torch::ScalarType in, torch::ScalarType compute, int warmup,
                   int reps, double unit);

// "CPU timings on 1 of 8 cores": the threads LibTorch uses against the machine's cores.
std::string cpu_threads_note();

// Restores cuBLAS's TF32 switch however the scope is left.
struct KeepTf32 {
  KeepTf32();
  ~KeepTf32();
  KeepTf32(const KeepTf32&) = delete;
  KeepTf32& operator=(const KeepTf32&) = delete;
  bool before;
};

}  // namespace lab
