// Lab 02 (loss-scaling, Q2), beyond what tests/test_labs.cpp holds every lab to: fp16 whatever --dtype says,
// fp16's lower end as the explanation quotes it, the growth interval stated where the scale is shown, and
// what --flip leaves standing.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "amp/grad_scaler.h"
#include "lab/libtorch.h"
#include "lab/skip_record.h"
#include "lab_test_support.h"

namespace lab02_loss_scaling_test {

namespace {

lab::Report run_quick(bool flip, torch::ScalarType dtype = torch::kHalf) {
  return run_quick_lab("loss-scaling", dtype, flip);
}

}  // namespace

TEST_CASE("without scaling fp16 zeroes many small gradients, and training with a GradScaler matches fp32") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("underflow_share_unscaled") >= 20.0);  // percent
  CHECK(r.value("underflow_share_fixed") <= 1.0);
  CHECK(r.value("underflow_share_scaler") <= 1.0);
  CHECK(r.value("loss_ratio_unscaled") >= 1.5);
  CHECK(r.value("loss_ratio_scaler") == doctest::Approx(1.0).epsilon(0.05));
  CHECK(r.value("skipped_steps") >= 1);  // the demo's scale starts too high
}

TEST_CASE("fp16 stores 2^-25 (a tie) as 0 and rounds 3e-8, just above it, up to 2^-24") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.value("fp16_min_subnormal") == std::ldexp(1.0, -24));
  CHECK(r.value("fp16_min_normal") == std::ldexp(1.0, -14));
  CHECK(r.value("half_sub_as_fp16") == 0.0);
  CHECK(r.value("three_e8_as_fp16") == std::ldexp(1.0, -24));
  CHECK(r.value("mse_outputs") == 2048);
  CHECK(r.value("fixed_scale") == 1024);
  CHECK(r.value("init_scale") == 65536);
}

TEST_CASE("the lab measures fp16 whatever 16-bit type the context names") {
  const lab::Report fp16 = run_quick(/*flip=*/false, torch::kHalf);
  const lab::Report bf16 = run_quick(/*flip=*/false, torch::kBFloat16);
  CHECK(bf16.passed());
  CHECK(bf16.value("underflow_share_unscaled") == fp16.value("underflow_share_unscaled"));
  CHECK(bf16.value("loss_ratio_unscaled") == fp16.value("loss_ratio_unscaled"));
}

TEST_CASE(
    "flipped, the gradients are not small: nothing underflows and fp16 trains as well without scaling") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK(r.value("underflow_share_unscaled") < 1.0);
  CHECK(r.value("loss_ratio_unscaled") == doctest::Approx(1.0).epsilon(0.05));
  CHECK(r.value("mse_outputs") == 2048);  // summed over them now
}

TEST_CASE("before the question: why the gradients are small, fp16's subnormal band, the growth interval") {
  const lab::Report r = run_quick(/*flip=*/false);
  const std::string text = r.render_text({.part = lab::Part::Measured});
  CHECK(text.find("small by construction") != std::string::npos);
  CHECK(text.find("subnormals: fewer bits") != std::string::npos);
  // The scale grows as far as it does only because growth_interval is short: said where the scale is shown.
  const size_t scale_at = text.find("last scale 2^");
  const size_t interval_at = text.find("growth_interval 50 (PyTorch's default: 2000)");
  REQUIRE(scale_at != std::string::npos);
  REQUIRE(interval_at != std::string::npos);
  CHECK(interval_at < scale_at);
  CHECK(text.find("Dynamic scaling") == std::string::npos);  // after the answer
}

namespace {

struct Records {
  std::vector<bool> stepped, overflowed, moved;
};

// Six steps of a tiny fp32 regression through an amp::GradScaler, an inf written into the input at step 2.
// `steps_itself`: the mistake, a step that unscales and calls opt.step() whatever the scaler found.
Records six_steps(bool steps_itself) {
  torch::manual_seed(0);
  torch::nn::Linear model(4, 1);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(torch::kCPU, {.init_scale = 1024});
  const torch::Tensor x = torch::randn({8, 4}), y = torch::randn({8, 1});
  Records rec;
  for (int step = 0; step < 6; ++step) {
    torch::Tensor xs = x.clone();
    if (step == 2) xs[0][0] = std::numeric_limits<float>::infinity();
    std::vector<torch::Tensor> before;
    for (const auto& w : model->parameters()) before.push_back(w.detach().clone());
    opt.zero_grad();
    scaler.scale(torch::mse_loss(model->forward(xs), y)).backward();
    bool stepped = true;
    if (steps_itself) {
      scaler.unscale_(opt);
      opt.step();
    } else {
      stepped = scaler.step(opt);
    }
    scaler.update();
    bool overflowed = false, moved = false;
    const auto after = model->parameters();
    for (size_t i = 0; i < after.size(); ++i) {
      overflowed = overflowed || !torch::isfinite(after[i].grad()).all().item<bool>();
      moved = moved || !torch::equal(before[i], after[i].detach());
    }
    rec.stepped.push_back(stepped), rec.overflowed.push_back(overflowed), rec.moved.push_back(moved);
  }
  return rec;
}

}  // namespace

TEST_CASE(
    "skips-exactly-overflows holds for scaler.step() and fails for a step that steps the optimizer itself") {
  const Records right = six_steps(/*steps_itself=*/false), wrong = six_steps(/*steps_itself=*/true);
  CHECK(right.overflowed[2]);
  CHECK(lab::skip_mismatch(right.stepped, right.overflowed, right.moved).empty());
  CHECK(wrong.overflowed[2]);
  CHECK(lab::skip_mismatch(wrong.stepped, wrong.overflowed, wrong.moved) ==
        "step 2: gradients overflowed, weights moved");
  // A step that skips but reports it stepped is caught by its return value.
  std::vector<bool> lying = right.stepped;
  lying[2] = true;
  CHECK(lab::skip_mismatch(lying, right.overflowed, right.moved) ==
        "step 2: step() returned true and the weights did not move");
}

}  // namespace lab02_loss_scaling_test
