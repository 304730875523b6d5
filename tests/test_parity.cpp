// Parity with PyTorch: tests/parity/grad_scaler_trace.py drives torch.amp.GradScaler("cpu") through a
// scripted run (natural overflows from a far-too-high initial scale, inf/NaN injected, explicit unscale_ and
// clipping on even steps); this test runs the same script with amp::GradScaler and requires the same trace.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "amp/grad_scaler.h"
#include "amp_lab_paths.h"


namespace {

torch::Tensor to_tensor(const nlohmann::json& rows) {
  std::vector<float> flat;
  int64_t n_rows = 0;
  for (const auto& row : rows) {
    ++n_rows;
    for (double v : row) flat.push_back(static_cast<float>(v));
  }
  return torch::tensor(flat).view({n_rows, -1});
}

float parse_value(const std::string& s) {
  if (s == "inf") return std::numeric_limits<float>::infinity();
  if (s == "-inf") return -std::numeric_limits<float>::infinity();
  if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
  return std::stof(s);
}

// Runs the reference script; nullopt (with the reason printed) when this machine has no Python torch.
std::optional<nlohmann::json> python_trace() {
  const std::string python = AMP_LAB_PYTHON;
  if (python.empty() || std::system(("\"" + python + "\" -c 'import torch' 2>/dev/null").c_str()) != 0) {
    std::cout << "SKIPPED: no Python with torch at '" << python
              << "' (scripts/setup provides one); the C++ side was not compared\n";
    return std::nullopt;
  }
  const auto out = std::filesystem::path(AMP_LAB_BINARY_DIR) / "parity_grad_scaler_trace.json";
  const std::string cmd = "\"" + python + "\" \"" AMP_LAB_SOURCE_DIR "/tests/parity/grad_scaler_trace.py\" \"" +
                          out.string() + "\"";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("amp::GradScaler reproduces torch.amp.GradScaler's trace step for step") {
  const auto doc = python_trace();
  if (!doc) return;
  const auto& cfg = (*doc)["config"];

  torch::nn::Sequential model(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  {
    torch::NoGradGuard no_grad;
    auto params = model->parameters();
    REQUIRE(params.size() == (*doc)["initial_params"].size());
    for (size_t i = 0; i < params.size(); ++i) {
      auto values = (*doc)["initial_params"][i].get<std::vector<float>>();
      params[i].copy_(torch::tensor(values).view_as(params[i]));
    }
  }
  const auto x = to_tensor((*doc)["x"]), y = to_tensor((*doc)["y"]);
  torch::optim::SGD opt(model->parameters(),
                        torch::optim::SGDOptions(cfg["lr"].get<double>()).momentum(cfg["momentum"].get<double>()));
  amp::GradScaler scaler(torch::kCPU, {.init_scale = cfg["init_scale"].get<double>(),
                                       .growth_factor = cfg["growth_factor"].get<double>(),
                                       .backoff_factor = cfg["backoff_factor"].get<double>(),
                                       .growth_interval = cfg["growth_interval"].get<int64_t>()});
  std::map<int, float> inject;
  for (const auto& item : cfg["inject"]) inject[item["step"].get<int>()] = parse_value(item["value"].get<std::string>());

  int skipped = 0;
  for (const auto& expected : (*doc)["trace"]) {
    const int step = expected["step"].get<int>();
    CAPTURE(step);
    opt.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), y, torch::Reduction::Sum);
    scaler.scale(loss).backward();
    if (inject.count(step)) model->parameters()[0].mutable_grad().view(-1)[0] = inject[step];
    if (step % 2 == 0) {
      scaler.unscale_(opt);
      torch::nn::utils::clip_grad_norm_(model->parameters(), cfg["clip_norm"].get<double>());
    }
    const bool stepped = scaler.step(opt);
    scaler.update();
    skipped += !stepped;
    CHECK(stepped == expected["stepped"].get<bool>());
    CHECK(scaler.get_scale() == expected["scale"].get<double>());
    CHECK(scaler.state_dict().growth_tracker == expected["growth_tracker"].get<int64_t>());
    CHECK(loss.item<double>() == doctest::Approx(expected["loss"].get<double>()).epsilon(1e-6));
  }
  CHECK(skipped >= 4);  // the run really exercised back-off (natural overflows and injected inf/NaN)

  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto want = torch::tensor((*doc)["final_params"][i].get<std::vector<float>>()).view_as(params[i]);
    const double max_rel = ((params[i].detach() - want).abs() / want.abs().clamp_min(1e-6)).max().item<double>();
    CAPTURE(i);
    CHECK(max_rel <= 1e-5);  // float32 rounding, not an algorithmic difference
  }
}
