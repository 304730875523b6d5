// A small seeded training problem for the scaler's tests, and one iteration of it through a GradScaler: every
// run of it starts from the same weights and data (tests/test_grad_scaler.cpp, tests/test_checkpoint.cpp).
#pragma once

#include "amp/grad_scaler.h"
#include "lab/libtorch.h"

namespace test_support {

struct Problem {
  torch::nn::Sequential model;
  torch::optim::SGD opt;
  torch::Tensor x, y;
  explicit Problem(uint64_t seed = 0, double lr = 0.05)
      : model(make_model(seed)),
        opt(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.9)),
        x(torch::randn({16, 4})),
        y(torch::randn({16, 2})) {}
  static torch::nn::Sequential make_model(uint64_t seed) {
    torch::manual_seed(seed);
    return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  }
  torch::Tensor loss() { return torch::mse_loss(model->forward(x), y); }
  torch::Tensor flat_params() {
    std::vector<torch::Tensor> ps;
    for (auto& p : model->parameters()) ps.push_back(p.detach().flatten());
    return torch::cat(ps);
  }
};

// One training iteration with the scaler; `poison` (if not 0) is written into the first grad.
inline bool train_step(Problem& p, amp::GradScaler& scaler, float poison = 0) {
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  if (poison != 0) p.model->parameters()[0].mutable_grad().view(-1)[0] = poison;
  bool stepped = scaler.step(p.opt);
  scaler.update();
  return stepped;
}

}  // namespace test_support
