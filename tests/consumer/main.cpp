// A few mixed-precision training steps with the amp library, as a project outside amp-lab writes them:
// a small regression MLP, forward and loss under amp::Autocast (bf16 on the CPU, fp16 on CUDA), the loss
// scaled, stepped and updated by amp::GradScaler. Exit code 0 only if the loss went down.
//   build/amp_consumer            (build: see CMakeLists.txt)
#include <cstdio>

#include <torch/torch.h>

#include "amp/autocast.h"
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
  return dropped ? 0 : 1;
}
