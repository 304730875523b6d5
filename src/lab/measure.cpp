#include "lab/measure.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include <ATen/Context.h>

#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include "lab/libtorch.h"
#include "lab/report.h"
#include "lab/text.h"

namespace lab {
namespace {

void sync(const Context& ctx) {
  if (ctx.cuda()) torch::cuda::synchronize();
}

double elapsed_ms(const Context& ctx, int calls, const std::function<void()>& fn) {
  sync(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  sync(ctx);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double median_ms(const Context& ctx, int warmup, int reps, const std::function<void()>& fn, double min_run_ms,
                 int max_calls) {
  double one = 0;
  for (int i = 0; i < warmup; ++i) one = elapsed_ms(ctx, 1, fn);
  const int calls = std::clamp(static_cast<int>(min_run_ms / std::max(one, 1e-3)), 1, max_calls);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(elapsed_ms(ctx, calls, fn) / calls);
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

std::string speed_words(double ratio, const std::string& baseline) {
  const std::string base = num(ratio, 3) + "x the speed of " + baseline;
  if (ratio > 1.05) return base + " (faster)";
  if (ratio < 0.95) return base + " (slower)";
  return base + " (about the same)";
}

int64_t tensor_bytes(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  return n;
}

std::optional<int64_t> peak_device_bytes(torch::Device device, const std::function<void()>& fn) {
  if (device.is_cpu()) {
    fn();
    return std::nullopt;
  }
  // Device-generic (c10), so this compiles against a CPU-only LibTorch and needs no CUDA header.
  const c10::DeviceIndex index =
      device.has_index() ? device.index() : c10::impl::getDeviceGuardImpl(device.type())->getDevice().index();
  c10::DeviceAllocator* allocator = c10::getDeviceAllocator(device.type());
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const int64_t before = allocator->getDeviceStats(index).allocated_bytes[kAll].current;
  allocator->resetPeakStats(index);
  fn();
  if (device.is_cuda()) torch::cuda::synchronize();
  return allocator->getDeviceStats(index).allocated_bytes[kAll].peak - before;
}

namespace {

// A CPU allocator that counts the bytes it hands out, installed by allocated_bytes() for one call. It
// allocates as c10's default CPU allocator does (c10::alloc_cpu, aligned) and keeps the size of every
// block it made, so that its deleter, which a tensor keeps after the call, can count the block out: only
// when it was made during the call still running (each call is a generation).
class CountingCpuAllocator final : public c10::Allocator {
 public:
  void start() {
    std::lock_guard lock(mutex_);
    ++generation_;
    live_ = peak_ = 0;
  }
  int64_t live() const {
    std::lock_guard lock(mutex_);
    return live_;
  }
  int64_t peak() const {
    std::lock_guard lock(mutex_);
    return peak_;
  }

  c10::DataPtr allocate(size_t n) override {
    void* data = c10::alloc_cpu(n);
    {
      std::lock_guard lock(mutex_);
      blocks_[data] = {n, generation_};
      live_ += static_cast<int64_t>(n);
      peak_ = std::max(peak_, live_);
    }
    return {data, data, &CountingCpuAllocator::release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &CountingCpuAllocator::release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  static CountingCpuAllocator& instance() {
    static auto* allocator = new CountingCpuAllocator();  // never destroyed: late deleters still call it
    return *allocator;
  }

 private:
  struct Block {
    size_t bytes;
    uint64_t generation;
  };
  static void release(void* data) {
    CountingCpuAllocator& self = instance();
    {
      std::lock_guard lock(self.mutex_);
      const auto it = self.blocks_.find(data);
      if (it != self.blocks_.end()) {
        if (it->second.generation == self.generation_) self.live_ -= static_cast<int64_t>(it->second.bytes);
        self.blocks_.erase(it);
      }
    }
    c10::free_cpu(data);
  }
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  uint64_t generation_ = 0;
  int64_t live_ = 0, peak_ = 0;
};

}  // namespace

AllocatedBytes allocated_bytes(torch::Device device, const std::function<void()>& fn) {
  if (device.is_cpu()) {
    constexpr uint8_t kPriority = 255;  // above the default CPU allocator's; restored at the same priority
    c10::Allocator* before = c10::GetCPUAllocator();
    CountingCpuAllocator& counting = CountingCpuAllocator::instance();
    counting.start();
    c10::SetCPUAllocator(&counting, kPriority);
    struct Restore {
      c10::Allocator* allocator;
      ~Restore() { c10::SetCPUAllocator(allocator, kPriority); }
    } restore{before};
    fn();
    return {counting.peak(), counting.live()};
  }
  const c10::DeviceIndex index =
      device.has_index() ? device.index() : c10::impl::getDeviceGuardImpl(device.type())->getDevice().index();
  c10::DeviceAllocator* allocator = c10::getDeviceAllocator(device.type());
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  if (device.is_cuda()) torch::cuda::synchronize();
  const int64_t before = allocator->getDeviceStats(index).allocated_bytes[kAll].current;
  allocator->resetPeakStats(index);
  fn();
  if (device.is_cuda()) torch::cuda::synchronize();
  const auto stats = allocator->getDeviceStats(index).allocated_bytes[kAll];
  return {stats.peak - before, stats.current - before};
}

double max_rel_error(const torch::Tensor& y, const torch::Tensor& ref) {
  const torch::Tensor r = ref.to(torch::kDouble);
  return ((y.detach().to(torch::kDouble) - r).abs().max() / r.abs().max()).item<double>();
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  const torch::Tensor ta = torch::tensor(a, torch::kDouble), tb = torch::tensor(b, torch::kDouble);
  if (!torch::isfinite(ta).all().item<bool>()) return std::numeric_limits<double>::infinity();  // diverged
  return max_rel_error(ta, tb);
}

bool parameters_equal(const torch::nn::Module& a, const torch::nn::Module& b, double* max_diff) {
  bool equal = true;
  auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    // Bit for bit: the same NaN twice is equal too (torch::equal says NaN != NaN).
    const auto bits = [](const torch::Tensor& t) {
      const auto size = t.element_size();
      return t.detach().contiguous().view(size == 8   ? torch::kInt64
                                          : size == 4 ? torch::kInt32
                                                      : torch::kInt16);
    };
    equal = equal && (pa[i].element_size() > 1 && pa[i].element_size() == pb[i].element_size()
                          ? torch::equal(bits(pa[i]), bits(pb[i]))
                          : torch::equal(pa[i], pb[i]));
    *max_diff = std::max(*max_diff, (pa[i] - pb[i]).abs().max().item<double>());
  }
  return equal;
}

std::vector<torch::Tensor> grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad());
  return g;
}

int64_t adam_state_bytes(const std::vector<torch::Tensor>& params, double learning_rate) {
  torch::optim::Adam adam(params, torch::optim::AdamOptions(learning_rate));
  adam.step();
  int64_t n = 0;
  for (const auto& [key, state] : adam.state()) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*state);
    n += tensor_bytes({s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()});
  }
  return n;
}

std::string mb_cell(std::optional<int64_t> bytes) {
  return !bytes || *bytes == 0 ? "-" : num(*bytes / 1e6, 3);
}

double matmul_rate(const Context& ctx, int64_t n, torch::ScalarType in, torch::ScalarType compute, int warmup,
                   int reps, double unit) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(ctx.device);
  const auto a = torch::randn({n, n}, f32).to(in), b = torch::randn({n, n}, f32).to(in);
  const double ms = median_ms(ctx, warmup, reps, [&] { torch::mm(a.to(compute), b.to(compute)).to(in); });
  return flop_rate(2.0 * n * n * n, ms, unit);
}

std::string cpu_threads_note() {
  return "CPU timings on " + std::to_string(torch::get_num_threads()) + " of " +
         std::to_string(std::thread::hardware_concurrency()) + " cores";
}

KeepTf32::KeepTf32() : before(at::globalContext().allowTF32CuBLAS()) {}
KeepTf32::~KeepTf32() {
  at::globalContext().setAllowTF32CuBLAS(before);
}

// ---- ScratchDir -------------------------------------------------------------------------------------------
namespace {

// The live scratch folders, in a fixed table the signal handler can read without locking or allocating.
constexpr int kScratchSlots = 16;
constexpr int kScratchSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumScratchSignals = 3;
struct ScratchSlot {
  std::atomic<bool> live{false};
  char path[PATH_MAX] = {};
};
ScratchSlot g_scratch[kScratchSlots];
std::mutex g_scratch_mutex;  // taken by constructors and destructors only, never in the handler
int g_scratch_live = 0;      // under the mutex: handlers are installed while it is above 0
struct sigaction g_scratch_previous[kNumScratchSignals];  // what was there before ours
bool g_scratch_installed[kNumScratchSignals] = {};

// Removes the entries of a flat folder and then the folder: async-signal-safe (open, getdents64, unlinkat,
// rmdir; no allocation). Entries are unlinked whatever they are; a subfolder (there is none by design) only
// if empty.
void remove_folder_signal_safe(const char* dir) {
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    // Unlinking while reading may hide entries from the same pass: read again until a pass removes nothing.
    for (int pass = 0; pass < 8; ++pass) {
      bool removed = false;
      ::lseek(fd, 0, SEEK_SET);
      alignas(8) char buf[4096];
      for (ssize_t n; (n = ::getdents64(fd, buf, sizeof buf)) > 0;) {
        for (ssize_t off = 0; off < n;) {
          const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
          off += d->d_reclen;
          const char* name = d->d_name;
          if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
          if (::unlinkat(fd, name, 0) == 0 || ::unlinkat(fd, name, AT_REMOVEDIR) == 0) removed = true;
        }
      }
      if (!removed) break;
    }
    ::close(fd);
  }
  ::rmdir(dir);
}

void remove_live_scratch_folders() {
  for (auto& slot : g_scratch)
    if (slot.live.load(std::memory_order_acquire)) remove_folder_signal_safe(slot.path);
}

int scratch_signal_index(int signo) {
  for (int i = 0; i < kNumScratchSignals; ++i)
    if (kScratchSignals[i] == signo) return i;
  return -1;
}

void on_scratch_signal(int signo, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const int i = scratch_signal_index(signo);
  const struct sigaction& before = g_scratch_previous[i];
  const bool chained = (before.sa_flags & SA_SIGINFO)
                           ? before.sa_sigaction != nullptr
                           : before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN;
  if (chained) {
    // A handler of the program's own (amp-lab's lets the running lab finish): it decides. The folders stay
    // for the lab to go on with, and their destructors remove them; unless that handler has set the default
    // action back to end the process (amp-lab's third Ctrl-C), in which case they go now.
    if (before.sa_flags & SA_SIGINFO)
      before.sa_sigaction(signo, info, context);
    else
      before.sa_handler(signo);
    struct sigaction now{};
    if (::sigaction(signo, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL)
      remove_live_scratch_folders();
    errno = saved_errno;
    return;
  }
  // No handler before ours: clean up, then end the process by this signal, as the default action would.
  remove_live_scratch_folders();
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(signo, &dfl, nullptr);
  ::raise(signo);  // blocked while this handler runs: delivered, with the default action, when it returns
  errno = saved_errno;
}

// Under g_scratch_mutex: our handler in front of each signal's current one (an ignored signal stays
// ignored), and once per process an exit() hook for the folders whose destructors will not run.
void install_scratch_handlers() {
  static const bool at_exit = std::atexit(remove_live_scratch_folders) == 0;
  (void)at_exit;
  for (int i = 0; i < kNumScratchSignals; ++i) {
    struct sigaction current{};
    if (::sigaction(kScratchSignals[i], nullptr, &current) != 0) continue;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    // Never chain to ourselves (a handler that was not restored because the first sigaction failed).
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_scratch_signal) continue;
    g_scratch_previous[i] = current;
    struct sigaction ours{};
    ours.sa_sigaction = on_scratch_signal;
    ours.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);  // keep the program's restart choice
    sigemptyset(&ours.sa_mask);
    g_scratch_installed[i] = ::sigaction(kScratchSignals[i], &ours, nullptr) == 0;
  }
}

// Under g_scratch_mutex, when the last folder is gone: the handlers that were there before, unless someone
// has replaced ours since.
void restore_scratch_handlers() {
  for (int i = 0; i < kNumScratchSignals; ++i) {
    if (!g_scratch_installed[i]) continue;
    g_scratch_installed[i] = false;
    struct sigaction current{};
    if (::sigaction(kScratchSignals[i], nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
        current.sa_sigaction == on_scratch_signal)
      ::sigaction(kScratchSignals[i], &g_scratch_previous[i], nullptr);
  }
}

std::string errno_text(int error) {
  return std::system_category().message(error);
}

}  // namespace

ScratchDir::ScratchDir(const std::string& stem) {
  const char* env = std::getenv("TMPDIR");
  const std::string base = env && *env ? env : "/tmp";  // empty means unset, as for mktemp(1)
  std::string tmpl = (std::filesystem::path(base) / (stem + "_XXXXXX")).string();
  if (stem.empty() || stem.find('/') != std::string::npos)
    throw std::runtime_error("scratch folder: the name " + quote(stem) + " must be one path component");
  if (tmpl.size() >= PATH_MAX) throw std::runtime_error("scratch folder: TMPDIR is too long");
  std::lock_guard lock(g_scratch_mutex);
  for (int i = 0; i < kScratchSlots && slot_ < 0; ++i)
    if (!g_scratch[i].live.load(std::memory_order_relaxed)) slot_ = i;
  if (slot_ < 0) throw std::runtime_error("scratch folder: more than 16 in use at once");
  // Handlers first, so that no moment passes with the folder made and no handler to remove it.
  if (g_scratch_live == 0) install_scratch_handlers();
  ScratchSlot& slot = g_scratch[slot_];
  std::memcpy(slot.path, tmpl.c_str(), tmpl.size() + 1);
  if (::mkdtemp(slot.path) == nullptr) {  // mode 0700, a name no one could guess or take first
    const int error = errno;
    if (g_scratch_live == 0) restore_scratch_handlers();
    throw std::runtime_error("scratch folder: cannot create " + tmpl + ": " + errno_text(error));
  }
  path_ = slot.path;
  slot.live.store(true, std::memory_order_release);
  ++g_scratch_live;
}

ScratchDir::~ScratchDir() {
  std::lock_guard lock(g_scratch_mutex);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // before the slot is freed: a signal meanwhile finishes the job
  g_scratch[slot_].live.store(false, std::memory_order_release);
  if (--g_scratch_live == 0) restore_scratch_handlers();
}

std::filesystem::path ScratchDir::file(const std::string& name) const {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw std::runtime_error("scratch file: the name " + quote(name) + " must be one path component");
  const std::filesystem::path p = path_ / name;
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("scratch file: cannot create " + p.string() + ": " + errno_text(errno));
  ::close(fd);
  return p;
}

}  // namespace lab
