// A few mixed-precision training steps with the amp library, as a project outside amp-lab writes them:
// a small regression MLP, forward and loss under amp::Autocast (bf16 on the CPU, fp16 on CUDA), the loss
// scaled, stepped and updated by amp::GradScaler; then a bf16 copy of the trained weights made with
// amp::stochastic_round_. Exit code 0 only if the loss went down and that copy is finite and within bf16
// rounding of the fp32 weights.
//   build/amp_consumer            (build: see CMakeLists.txt)
#include <cmath>
#include <cstdio>

#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/bf16_update.h"
#include "amp/grad_scaler.h"

constexpr int kSteps = 40;  // enough for the loss to fall well below its start
constexpr int64_t kBatch = 64;
constexpr int64_t kFeatures = 16;
constexpr double kLearningRate = 0.05;
constexpr double kRequiredDrop = 0.5;  // the last loss must be below half the first

int main() {
  torch::manual_seed(0);
  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  std::printf("device %s\n", device.str().c_str());

  // Targets from a fixed random linear map, so the model can fit them.
  const torch::Tensor x = torch::randn({kBatch, kFeatures}, device);
  const torch::Tensor y = x.matmul(torch::randn({kFeatures, 1}, device));

  torch::nn::Sequential model(torch::nn::Linear(kFeatures, 32), torch::nn::ReLU(), torch::nn::Linear(32, 1));
  model->to(device);  // fp32 master weights: autocast computes in 16 bits, the optimizer updates fp32
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(kLearningRate));
  amp::GradScaler scaler(device);

  double first = 0.0, last = 0.0;
  int skipped = 0;
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      amp::Autocast autocast(device);  // the device's default 16-bit type
      loss = torch::mse_loss(model->forward(x), y);
    }  // backward outside autocast
    scaler.scale(loss).backward();
    if (!scaler.step(optimizer)) ++skipped;  // skipped when a gradient overflowed at this scale
    scaler.update();
    last = loss.item<double>();
    if (step == 0) first = last;
    if (step % 10 == 0 || step == kSteps - 1)
      std::printf("step %2d  loss %.5f  scale %g\n", step, last, scaler.get_scale());
  }
  const bool dropped = last < kRequiredDrop * first;
  std::printf("loss %.5f -> %.5f over %d steps (%d skipped by the scaler): %s\n", first, last, kSteps,
              skipped, dropped ? "went down" : "DID NOT go down enough");

  // The trained weights rounded stochastically to bf16 (the default generator, seeded above): each value
  // finite and less than one bf16 spacing from its fp32 value (at most |w| * 2^-7; 2^-133 near zero).
  int64_t values = 0, off = 0;
  for (const torch::Tensor& p : model->parameters()) {
    const torch::Tensor w = p.detach();
    torch::Tensor copy = torch::empty_like(w, torch::kBFloat16);
    amp::stochastic_round_(copy, w);
    const torch::Tensor spacing = w.abs().mul(1.0 / 128).clamp_min(std::ldexp(1.0, -133));
    const torch::Tensor wrong =
        torch::isfinite(copy).logical_not() | (copy.to(torch::kFloat) - w).abs().ge(spacing);
    off += wrong.sum().item<int64_t>();
    values += w.numel();
  }
  std::printf("bf16 copy of %lld weights, rounded stochastically: %lld not finite or off by a bf16 spacing\n",
              static_cast<long long>(values), static_cast<long long>(off));
  return dropped && off == 0 ? 0 : 1;
}
