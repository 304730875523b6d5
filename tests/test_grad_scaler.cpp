// amp::GradScaler: torch.amp.GradScaler's semantics, one behaviour per test.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <torch/torch.h>

#include "amp/checkpoint.h"
#include "amp/grad_scaler.h"
#include "doctest_torch.h"

namespace {

const torch::Device kCpu(torch::kCPU);
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A small seeded problem: every run of it starts from the same weights and data.
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
bool train_step(Problem& p, amp::GradScaler& scaler, float poison = 0) {
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  if (poison != 0) p.model->parameters()[0].mutable_grad().view(-1)[0] = poison;
  bool stepped = scaler.step(p.opt);
  scaler.update();
  return stepped;
}

}  // namespace

TEST_CASE("the scale grows by growth_factor after growth_interval clean steps") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 4.0, .growth_interval = 3});
  CHECK(scaler.get_scale() == 4.0);
  CHECK(train_step(p, scaler));
  CHECK(train_step(p, scaler));
  CHECK(scaler.get_scale() == 4.0);
  CHECK(scaler.state_dict().growth_tracker == 2);
  CHECK(train_step(p, scaler));
  CHECK(scaler.get_scale() == 8.0);
  CHECK(scaler.state_dict().growth_tracker == 0);
}

TEST_CASE("an inf gradient skips the step, backs off the scale and resets the tracker") {
  for (float poison : {kInf, -kInf, kNaN}) {
    CAPTURE(poison);
    Problem p;
    amp::GradScaler scaler(kCpu, {.init_scale = 1024.0, .growth_interval = 100});
    REQUIRE(train_step(p, scaler));
    const auto before = p.flat_params().clone();
    CHECK_FALSE(train_step(p, scaler, poison));
    CHECK(torch::equal(p.flat_params(), before));
    CHECK(scaler.get_scale() == 512.0);
    CHECK(scaler.state_dict().growth_tracker == 0);
  }
}

TEST_CASE("unscaled gradients equal the unscaled run exactly when the scale is a power of two") {
  for (double s : {1.0, 256.0, 65536.0, std::ldexp(1.0, 40)}) {
    CAPTURE(s);
    Problem plain, scaled;
    plain.loss().backward();
    amp::GradScaler scaler(kCpu, {.init_scale = s});
    scaler.scale(scaled.loss()).backward();
    scaler.unscale_(scaled.opt);
    auto pp = plain.model->parameters(), sp = scaled.model->parameters();
    for (size_t i = 0; i < pp.size(); ++i) CHECK(torch::equal(pp[i].grad(), sp[i].grad()));
  }
}

TEST_CASE("scale() multiplies one tensor or a list of tensors by the current scale") {
  amp::GradScaler scaler(kCpu, {.init_scale = 8.0});
  CHECK(scaler.scale(torch::tensor(1.5f)).item<float>() == 12.0f);
  auto outs = scaler.scale(std::vector<torch::Tensor>{torch::tensor(1.0f), torch::tensor(-2.0f)});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].item<float>() == 8.0f);
  CHECK(outs[1].item<float>() == -16.0f);
}

TEST_CASE("unscale_ twice before update is refused with Python's message") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.unscale_(p.opt);
  CHECK_THROWS_WITH_AS(scaler.unscale_(p.opt),
                       "unscale_() has already been called on this optimizer since the last update().",
                       amp::GradScalerError);
}

TEST_CASE("unscale_ after step is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  CHECK_THROWS_WITH_AS(scaler.unscale_(p.opt), "unscale_() is being called after step().", amp::GradScalerError);
}

TEST_CASE("step twice before update is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  CHECK_THROWS_WITH_AS(scaler.step(p.opt), "step() has already been called since the last update().",
                       amp::GradScalerError);
}

TEST_CASE("update with no inf checks recorded is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  CHECK_THROWS_WITH_AS(scaler.update(), "No inf checks were recorded prior to update.", amp::GradScalerError);
}

TEST_CASE("step, unscale_ and update before any scale() are refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  p.loss().backward();
  CHECK_THROWS_WITH_AS(scaler.step(p.opt), doctest::Contains("Attempted step but _scale is None"), amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.unscale_(p.opt), doctest::Contains("Attempted unscale_"), amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(), doctest::Contains("Attempted update"), amp::GradScalerError);
}

TEST_CASE("step on an optimizer without gradients is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss());  // no backward: no grads
  CHECK_THROWS_WITH_AS(scaler.step(p.opt), "No inf checks were recorded for this optimizer.", amp::GradScalerError);
}

TEST_CASE("fp16 gradients are refused: the parameters must be fp32 master weights") {
  auto w = torch::ones({3}, torch::kHalf).requires_grad_();
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(kCpu);
  scaler.scale((w * 2).sum()).backward();
  REQUIRE(dtype_of(w.grad()) == dtype_name(torch::kHalf));
  CHECK_THROWS_WITH_AS(scaler.unscale_(opt), "Attempting to unscale FP16 gradients.", amp::GradScalerError);
}

TEST_CASE("growth and backoff factors are validated like Python's") {
  CHECK_THROWS_WITH_AS(amp::GradScaler(kCpu, {.growth_factor = 1.0}), "The growth factor must be > 1.0.",
                       amp::GradScalerError);
  CHECK_THROWS_WITH_AS(amp::GradScaler(kCpu, {.backoff_factor = 1.0}), "The backoff factor must be < 1.0.",
                       amp::GradScalerError);
  CHECK_NOTHROW(amp::GradScaler(kCpu, {.growth_factor = 1.0, .enabled = false}));
}

TEST_CASE("a state_dict round-trip mid-run continues identically") {
  auto run = [](bool interrupt) {
    Problem p;
    auto scaler = std::make_unique<amp::GradScaler>(kCpu, amp::GradScalerOptions{.init_scale = 64.0, .growth_interval = 2});
    std::vector<double> scales;
    for (int step = 0; step < 10; ++step) {
      if (interrupt && step == 5) {
        const amp::GradScalerState state = scaler->state_dict();
        scaler = std::make_unique<amp::GradScaler>(kCpu);  // fresh defaults, then the saved state
        scaler->load_state_dict(state);
      }
      train_step(p, *scaler, step == 3 ? kInf : 0.0f);
      scales.push_back(scaler->get_scale());
    }
    return std::make_pair(scales, p.flat_params());
  };
  const auto [scales_a, params_a] = run(false);
  const auto [scales_b, params_b] = run(true);
  CHECK(scales_a == scales_b);
  CHECK(torch::equal(params_a, params_b));
  CHECK(scales_a.back() != 64.0);  // the run did change the scale, so the round-trip carried something
}

TEST_CASE("one checkpoint file holds model, optimizer and scaler, and resumes identically") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint.pt").string();
  Problem a, b(/*seed=*/99);  // b starts from other weights and is overwritten by the checkpoint
  amp::GradScaler sa(kCpu, {.init_scale = 32.0, .growth_interval = 2});
  amp::GradScaler sb(kCpu);
  for (int i = 0; i < 3; ++i) train_step(a, sa);
  amp::save_checkpoint(path, *a.model, a.opt, sa);
  b.x = a.x, b.y = a.y;
  amp::load_checkpoint(path, *b.model, b.opt, sb);
  std::filesystem::remove(path);
  CHECK(sb.get_scale() == sa.get_scale());
  CHECK(sb.state_dict().growth_tracker == sa.state_dict().growth_tracker);
  for (int i = 0; i < 4; ++i) {
    train_step(a, sa);
    train_step(b, sb);
  }
  CHECK(torch::equal(a.flat_params(), b.flat_params()));
  CHECK(sa.get_scale() == sb.get_scale());
}

TEST_CASE("load_state_dict refuses the empty state of a disabled scaler") {
  amp::GradScaler disabled(kCpu, {.enabled = false});
  amp::GradScaler enabled(kCpu);
  CHECK(disabled.state_dict().empty);
  CHECK_THROWS_WITH_AS(enabled.load_state_dict(disabled.state_dict()),
                       doctest::Contains("The source state dict is empty"), amp::GradScalerError);
}

TEST_CASE("a disabled scaler is a passthrough") {
  Problem p, ref;
  amp::GradScaler scaler(kCpu, {.enabled = false});
  auto loss = p.loss();
  CHECK(scaler.scale(loss).is_same(loss));
  loss.backward();
  CHECK(scaler.step(p.opt));
  scaler.update();
  ref.loss().backward();
  ref.opt.step();
  CHECK(torch::equal(p.flat_params(), ref.flat_params()));
  CHECK(scaler.get_scale() == 1.0);
  CHECK_FALSE(scaler.is_enabled());
  CHECK(scaler.host_syncs() == 0);
}

TEST_CASE("two optimizers share one update, and each skips on its own") {
  Problem p1(1), p2(2);
  amp::GradScaler scaler(kCpu, {.init_scale = 128.0, .growth_interval = 1});
  const auto before1 = p1.flat_params().clone(), before2 = p2.flat_params().clone();
  p1.opt.zero_grad();
  p2.opt.zero_grad();
  auto losses = scaler.scale(std::vector<torch::Tensor>{p1.loss(), p2.loss()});
  (losses[0] + losses[1]).backward();
  p2.model->parameters()[0].mutable_grad().view(-1)[0] = kInf;
  CHECK(scaler.step(p1.opt));
  CHECK_FALSE(scaler.step(p2.opt));
  scaler.update();
  CHECK_FALSE(torch::equal(p1.flat_params(), before1));
  CHECK(torch::equal(p2.flat_params(), before2));
  CHECK(scaler.get_scale() == 64.0);  // one backoff for the iteration, not one per optimizer
}

TEST_CASE("a training step makes exactly one host sync, in step") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.growth_interval = 2});
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  scaler.unscale_(p.opt);
  CHECK(scaler.host_syncs() == 0);
  scaler.step(p.opt);
  CHECK(scaler.host_syncs() == 1);
  scaler.update();
  CHECK(scaler.host_syncs() == 1);
  for (int i = 0; i < 5; ++i) train_step(p, scaler);
  CHECK(scaler.host_syncs() == 6);
}

TEST_CASE("update(new_scale) sets the scale and leaves the tracker alone") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 16.0, .growth_interval = 10});
  train_step(p, scaler);
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  scaler.update(/*new_scale=*/3.0);
  CHECK(scaler.get_scale() == 3.0);
  CHECK(scaler.state_dict().growth_tracker == 1);
}
