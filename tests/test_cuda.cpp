// What only a CUDA LibTorch has. Built with one only (tests/CMakeLists.txt; scripts/test --cuda-build).
// On any machine: the device queries of src/amp/device_caps.cpp and `amp-lab info` agree with torch::cuda,
// GPU or not. On a machine with a GPU (without one each of these prints "SKIPPED: <why>" and ctest reports it
// skipped): amp::GradScaler's CUDA path makes one host sync per step, counted by torch's CUDA sync debug mode
// (the one torch.cuda.set_sync_debug_mode sets), and `amp-lab info` names the GPU as this process sees it.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "amp_lab_paths.h"
#include "lab/libtorch.h"

namespace {

constexpr const char* kNoGpu = "SKIPPED: no CUDA device visible to this LibTorch (a GPU-only test)\n";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Run {
  int code = -1;
  std::string out;
};

// `build/bin/amp-lab <args>` with NO_COLOR, its stdout and exit code.
Run amp_lab(const std::string& args) {
  Run r;
  const std::string cmd = "NO_COLOR=1 \"" AMP_LAB_BINARY_DIR "/bin/amp-lab\" " + args + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Counts the warnings torch's CUDA sync debug mode gives, one per synchronizing call (a blocking copy to the
// host, a stream or device synchronize), and keeps any other warning's text.
struct SyncCounter : c10::WarningHandler {
  int syncs = 0;
  std::vector<std::string> others;
  void process(const c10::Warning& warning) override {
    if (has(warning.msg(), "called a synchronizing CUDA operation"))
      ++syncs;
    else
      others.push_back(warning.msg());
  }
};

// While alive: the sync debug mode warns, and the warnings of this thread (and those the autograd engine's
// threads hand back to it at the end of backward) go to the counter.
class CountSyncs {
 public:
  explicit CountSyncs(SyncCounter& counter) : guard_(&counter) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  }
  ~CountSyncs() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED); }
  CountSyncs(const CountSyncs&) = delete;
  CountSyncs& operator=(const CountSyncs&) = delete;

 private:
  c10::WarningUtils::WarningHandlerGuard guard_;
};

}  // namespace

TEST_CASE("with a CUDA LibTorch the device queries agree with torch::cuda, with a GPU or without one") {
  const bool available = torch::cuda::is_available();
  CHECK(amp::cuda_available() == available);
  if (!available) {
    CHECK(amp::cuda_compute_capability() == 0);
    CHECK(amp::cuda_device_name().empty());
    CHECK_FALSE(amp::cuda_supports_bf16());
    CHECK_FALSE(amp::cuda_supports_bf16_natively());
    CHECK_THROWS_AS(amp::GradScaler(torch::kCUDA), amp::GradScalerError);
    return;
  }
  const int cc = amp::cuda_compute_capability();
  CAPTURE(cc);
  CHECK(cc >= 50);  // CUDA 12 and 13 run on Maxwell (5.0) and newer only
  const std::string name = amp::cuda_device_name();
  CAPTURE(name);
  CHECK(name.size() > std::string(" (sm_)").size() + 2);
  CHECK(name.substr(name.size() - (" (sm_" + std::to_string(cc) + ")").size()) ==
        " (sm_" + std::to_string(cc) + ")");
  CHECK(amp::cuda_supports_bf16_natively() == (cc >= 80));
  if (cc >= 80) CHECK(amp::cuda_supports_bf16());
}

TEST_CASE("amp-lab info, built against a CUDA LibTorch, says so and reports the CUDA device or its absence") {
  const Run info = amp_lab("info");
  CAPTURE(info.out);
  CHECK(info.code == 0);
  CHECK(has(info.out, "(CUDA build)"));
  if (torch::cuda::is_available())
    CHECK(has(info.out, "CUDA            " + amp::cuda_device_name() + " · compute capability "));
  else
    CHECK(has(info.out, "CUDA            no CUDA device available (labs run on the CPU)"));
}

TEST_CASE("GPU: amp-lab info names the GPU, its compute capability and its bf16 support") {
  if (!torch::cuda::is_available()) {
    std::cout << kNoGpu;
    return;
  }
  const int cc = amp::cuda_compute_capability();
  const std::string bf16 = amp::cuda_supports_bf16_natively() ? "native"
                           : amp::cuda_supports_bf16()        ? "emulated (native needs 8.0+)"
                                                              : "not supported";
  const std::string line = "CUDA            " + amp::cuda_device_name() + " · compute capability " +
                           std::to_string(cc / 10) + "." + std::to_string(cc % 10) + " · bf16 " + bf16 + "\n";
  const Run info = amp_lab("info");
  CAPTURE(info.out);
  CHECK(info.code == 0);
  CHECK(has(info.out, line));
}

TEST_CASE(
    "GPU: amp::GradScaler on CUDA makes one host sync per step, counted by torch's CUDA sync debug mode") {
  if (!torch::cuda::is_available()) {
    std::cout << kNoGpu;
    return;
  }
  const torch::Device device(torch::kCUDA);
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 1));
  model->to(device);
  const auto x = torch::randn({64, 16}, device), y = torch::randn({64, 1}, device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  amp::GradScaler scaler(device, {.init_scale = 65536.0, .growth_interval = 2});
  auto first = model->parameters()[0];
  // One fp16-autocast training step; inject_inf writes inf into a gradient, so step() skips the optimizer.
  auto step = [&](bool inject_inf) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast autocast(device, torch::kHalf);
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    if (inject_inf) first.mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    const bool stepped = scaler.step(optimizer);
    scaler.update();
    return stepped;
  };
  // Warm-up outside the count: cuBLAS handles and workspaces, the caching allocator, the scale's lazy init.
  for (int i = 0; i < 3; ++i) step(false);
  torch::cuda::synchronize();

  // The counter itself: one blocking read of a device value is one sync.
  SyncCounter counter;
  {
    CountSyncs count(counter);
    (void)torch::ones({4}, device).sum().item<float>();
  }
  REQUIRE_MESSAGE(counter.syncs == 1,
                  "the sync debug mode counted " << counter.syncs << " syncs for one .item()");

  constexpr int kSteps = 8, kInjectAt = 5;
  std::vector<int> per_step;
  int skipped = 0;
  const int64_t scaler_syncs = scaler.host_syncs();
  {
    CountSyncs count(counter);
    for (int s = 0; s < kSteps; ++s) {
      const int before = counter.syncs;
      skipped += !step(s == kInjectAt);
      per_step.push_back(counter.syncs - before);
    }
  }
  for (int s = 0; s < kSteps; ++s) {
    CAPTURE(s);
    CHECK(per_step[s] ==
          1);  // step()'s read of found_inf, as in Python's _maybe_opt_step; update() reads nothing
  }
  CHECK(scaler.host_syncs() - scaler_syncs == kSteps);  // the scaler's own count says the same
  CHECK(skipped == 1);  // the injected inf was seen: the skipped step synced once too
  for (const auto& other : counter.others) MESSAGE("another warning during the steps: " << other);
}
