// The amp library used by a project outside amp-lab, as a LibTorch user writes it, in plain C++17 (no
// designated initializers; the build sets the standard LibTorch asks for: C++17 for 2.13, C++20 for 2.14):
//   1. every public header included;
//   2. a deliberate misuse of each component, each caught by one `catch (const amp::Error&)` clause;
//   3. fp16/bf16 mixed precision: a small regression MLP under amp::Autocast, its loss scaled, stepped and
//      updated by amp::GradScaler;
//   4. bf16 parameters with no fp32 master copy: the same MLP in bf16, trained by amp::Bf16Step around
//      torch::optim::AdamW (its fp32 update rounded stochastically to bf16).
// Exit code 0 only if every misuse threw an amp::Error and both losses went down.
//   build/amp_consumer            (build: see CMakeLists.txt)
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/bf16_step.h"
#include "amp/bf16_update.h"
#include "amp/checkpoint.h"
#include "amp/clip.h"
#include "amp/custom_function.h"
#include "amp/device_caps.h"
#include "amp/distributed.h"
#include "amp/error.h"
#include "amp/grad_scaler.h"
#include "amp/mx.h"
#include "amp/nonfinite.h"
#include "amp/nvfp4.h"

constexpr int kSteps = 40;  // enough for the loss to fall well below its start
constexpr int64_t kBatch = 64;
constexpr int64_t kFeatures = 16;
constexpr double kLearningRate = 0.05;     // SGD, fp32 master weights
constexpr double kBf16LearningRate = 0.01;  // AdamW, bf16 weights
constexpr double kRequiredDrop = 0.5;       // the last loss must be below half the first

// A custom autograd function whose forward forgot amp::CustomFwd: its backward's CustomBwd refuses.
struct NoCustomFwd : torch::autograd::Function<NoCustomFwd> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x * 2; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    amp::CustomBwd amp_bwd(ctx, torch::kCPU);
    return {grad[0] * 2};
  }
};

// Runs `misuse`; true when it threw an amp::Error, whose message is printed.
bool refused(const char* component, const std::function<void()>& misuse) {
  try {
    misuse();
  } catch (const amp::Error& e) {
    std::printf("  %-18s amp::Error: %s\n", component, e.what());
    return true;
  }
  std::printf("  %-18s NOT REFUSED\n", component);
  return false;
}

// Trains `model` for kSteps on (x, y) with `step` (one optimizer step from the model's loss); returns whether
// the loss went down by kRequiredDrop.
bool went_down(const char* what, const std::function<torch::Tensor()>& step) {
  double first = 0.0, last = 0.0;
  for (int s = 0; s < kSteps; ++s) {
    last = step().item<double>();
    if (s == 0) first = last;
  }
  const bool dropped = last < kRequiredDrop * first;
  std::printf("%s: loss %.5f -> %.5f over %d steps: %s\n", what, first, last, kSteps,
              dropped ? "went down" : "DID NOT go down enough");
  return dropped;
}

int main() {
  torch::manual_seed(0);
  const torch::Device device = amp::cuda_available() ? torch::kCUDA : torch::kCPU;
  std::printf("device %s, C++ %ld, LibTorch %s\n", device.str().c_str(), static_cast<long>(__cplusplus),
              TORCH_VERSION);

  // 2. Each component's misuse, caught as amp::Error.
  std::printf("misuse of each component:\n");
  int refusals = 0, misuses = 0;
  const torch::Tensor fp32 = torch::ones({4});
  auto count = [&](bool r) { misuses += 1, refusals += r; };
  count(refused("Autocast", [] { amp::Autocast ac(torch::kCPU, torch::kDouble); }));
  count(refused("GradScaler", [&] { amp::GradScaler(device).update(); }));
  count(refused("stochastic_round_", [&] { amp::stochastic_round_(fp32, fp32); }));
  count(refused("Bf16Step", [&] {
    amp::Bf16Step opt({torch::ones({4}, torch::requires_grad())}, [](std::vector<torch::Tensor> p) {
      return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1));
    });
  }));
  count(refused("checkpoint", [&] {
    torch::nn::Linear m(2, 2);
    torch::optim::SGD o(m->parameters(), torch::optim::SGDOptions(0.1));
    amp::GradScaler s(torch::kCPU);
    amp::load_checkpoint("no/such/checkpoint.pt", *m, o, s);
  }));
  count(refused("clip", [&] { amp::clip_grad_norm_sharded({fp32}, /*max_norm=*/-1.0); }));
  count(refused("CustomBwd", [] {
    NoCustomFwd::apply(torch::ones({2}, torch::requires_grad())).sum().backward();
  }));
  count(refused("NonfiniteWatch", [] {
    amp::NonfiniteWatch outer;
    amp::NonfiniteWatch inner;  // watches do not nest
  }));
  count(refused("distributed", [] { amp::found_inf_all_reduce(/*group=*/{}); }));
  // 40 values do not split into MX blocks of 32.
  count(refused("mx_quantize", [] { amp::mx_quantize(torch::ones({40}), torch::kFloat8_e4m3fn); }));
  // 40 values do not split into NVFP4 blocks of 16.
  count(refused("nvfp4_quantize", [] { amp::nvfp4_quantize(torch::ones({40})); }));

  // Targets from a fixed random linear map, so the model can fit them.
  const torch::Tensor x = torch::randn({kBatch, kFeatures}, device);
  const torch::Tensor y = x.matmul(torch::randn({kFeatures, 1}, device));
  auto mlp = [&] {
    torch::nn::Sequential m(torch::nn::Linear(kFeatures, 32), torch::nn::ReLU(), torch::nn::Linear(32, 1));
    m->to(device);
    return m;
  };

  // 3. Mixed precision: fp32 master weights, forward in the device's 16-bit type, the loss scaled.
  torch::nn::Sequential model = mlp();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(kLearningRate));
  amp::GradScaler scaler(device);
  int skipped = 0;
  const bool amp_ok = went_down("autocast + GradScaler", [&] {
    sgd.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast autocast(device);  // the device's default 16-bit type
      loss = torch::mse_loss(model->forward(x), y);
    }
    scaler.scale(loss).backward();
    if (!scaler.step(sgd)) ++skipped;  // skipped when a gradient overflowed at this scale
    scaler.update();
    return loss;
  });
  std::printf("  (%d steps skipped by the scaler), final scale %g\n", skipped, scaler.get_scale());

  // 4. bf16 weights and no master copy: AdamW's fp32 update rounded stochastically into them.
  torch::nn::Sequential bf16_model = mlp();
  bf16_model->to(torch::kBFloat16);
  amp::Bf16StepOptions options;
  options.seed = 0;  // reproducible rounding
  amp::Bf16Step bf16_step(
      bf16_model->parameters(),
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(kBf16LearningRate));
      },
      options);
  const torch::Tensor x16 = x.to(torch::kBFloat16), y16 = y.to(torch::kBFloat16);
  const bool bf16_ok = went_down("bf16 weights, amp::Bf16Step(AdamW)", [&] {
    bf16_step.zero_grad();
    torch::Tensor loss = torch::mse_loss(bf16_model->forward(x16).to(torch::kFloat), y16.to(torch::kFloat));
    loss.backward();
    bf16_step.step();
    return loss;
  });
  int64_t bytes = 0;
  for (const auto& p : bf16_model->parameters()) bytes += p.numel() * p.element_size();
  std::printf("  weights: %lld bytes of bf16, no fp32 copy\n", static_cast<long long>(bytes));

  std::printf("%d of %d misuses threw amp::Error; the loss %s with the GradScaler and %s with Bf16Step\n",
              refusals, misuses, amp_ok ? "went down" : "did NOT go down",
              bf16_ok ? "went down" : "did NOT go down");
  return refusals == misuses && amp_ok && bf16_ok ? 0 : 1;
}
