// Parity with PyTorch for the AMP examples page: tests/parity/amp_recipes_trace.py runs each recipe through
// torch.amp on the CPU (fp16 autocast) on seeded data; this test replays the same recipe on the same data
// with amp::GradScaler and amp::CustomFwd/CustomBwd and requires the same scales and skipped steps, and the
// same parameters, outputs and gradients to float32 rounding. tests/test_parity_recipes_cuda.cpp includes
// this file with AMP_LAB_PARITY_CUDA defined: the same recipes on CUDA (skipped without a CUDA device).
// Without a Python torch the tests report themselves skipped; under CI=true that is a failure instead.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "amp/autocast.h"
#include "amp/custom_function.h"
#include "amp/grad_scaler.h"
#include "amp_lab_paths.h"
#include "lab/libtorch.h"

namespace test_parity_recipes {

namespace {

namespace F = torch::nn::functional;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Params = std::vector<torch::Tensor>;

#ifdef AMP_LAB_PARITY_CUDA
const torch::Device kDevice(torch::kCUDA);
#else
const torch::Device kDevice(torch::kCPU);
#endif

constexpr double kRel = 1e-5;  // float32 rounding, not an algorithmic difference

torch::Tensor tensor(const nlohmann::json& j) {
  const auto data = j["data"].get<std::vector<double>>();
  const auto shape = j["shape"].get<std::vector<int64_t>>();
  return torch::tensor(data, torch::kDouble).view(shape).to(kDevice, torch::kFloat);
}

Params leaves(const nlohmann::json& list) {
  Params p;
  for (const auto& j : list) p.push_back(tensor(j).requires_grad_(true));
  return p;
}

double max_rel(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got.detach().to(torch::kFloat) - want).abs() / want.abs().clamp_min(1e-6)).max().item<double>();
}

void check_params(const Params& got, const nlohmann::json& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(max_rel(got[i], tensor(want[i])) <= kRel);
  }
}

torch::Tensor mlp(const Params& p, const torch::Tensor& x) {
  return torch::linear(torch::tanh(torch::linear(x, p[0], p[1])), p[2], p[3]);
}

// The reference trace; nullopt (with the reason printed) when this machine has no Python torch.
const nlohmann::json* python_trace() {
  static std::optional<nlohmann::json> doc;
  static bool tried = false;
  if (!tried) {
    tried = true;
    if (kDevice.is_cuda() && !torch::cuda::is_available()) {
      std::cout << "SKIPPED: no CUDA device visible to this LibTorch (the recipes on CUDA need a GPU)\n";
      return nullptr;
    }
    const char* env_python = std::getenv("AMP_LAB_PYTHON");
    const std::string python = env_python && *env_python ? env_python : AMP_LAB_PYTHON;
    const char* ci = std::getenv("CI");
    const std::string check =
        kDevice.is_cuda() ? "import sys, torch; sys.exit(not torch.cuda.is_available())" : "import torch";
    if (python.empty() || std::system(("\"" + python + "\" -c '" + check + "' 2>/dev/null").c_str()) != 0) {
      const std::string why = "no Python with torch" +
                              std::string(kDevice.is_cuda() ? " seeing a CUDA device" : "") + " at '" +
                              python + "' (scripts/setup provides one)";
      if (ci && std::strcmp(ci, "true") == 0) FAIL("CI=true and the parity reference cannot run: " << why);
      std::cout << "SKIPPED: " << why << "; the C++ side was not compared\n";
      return nullptr;
    }
    // One file per test process: ctest runs this file's cases as processes of their own, side by side, and a
    // trace shared between them was read by one while another wrote it.
    const auto out =
        std::filesystem::path(AMP_LAB_BINARY_DIR) /
        ("parity_amp_recipes_trace_" + kDevice.str() + "." + std::to_string(::getpid()) + ".json");
    const std::string cmd = "\"" + python +
                            "\" \"" AMP_LAB_SOURCE_DIR "/tests/parity/amp_recipes_trace.py\" \"" +
                            out.string() + "\" " + kDevice.str() + " 2>/dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    {
      std::ifstream in(out);
      doc = nlohmann::json::parse(in);
    }
    std::filesystem::remove(out);
  }
  if (!doc) std::cout << "SKIPPED: no Python trace (see the first test's output)\n";
  return doc ? &*doc : nullptr;
}

// Whether the optimizer changed the first parameter (Python's trace records it the same way).
bool changed(const torch::Tensor& before, const torch::Tensor& after) {
  return !torch::equal(before, after.detach());
}

struct RowNorm : torch::autograd::Function<RowNorm> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor h) {
    amp::CustomFwd fwd(ctx, kDevice.type(), /*cast_inputs=*/torch::kFloat);
    h = fwd.cast(h);
    const auto n = (h * h).sum(/*dim=*/1).sqrt();
    ctx->save_for_backward({h, n});
    return n;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    amp::CustomBwd bwd(ctx, kDevice.type());
    const auto s = ctx->get_saved_variables();
    return {grad[0].unsqueeze(1) * s[0] / s[1].unsqueeze(1)};
  }
};

struct MatMul : torch::autograd::Function<MatMul> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
    amp::CustomFwd fwd(ctx, kDevice.type());
    ctx->save_for_backward({a, b});
    return a.mm(b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    amp::CustomBwd bwd(ctx, kDevice.type());
    const auto s = ctx->get_saved_variables();
    return {grad[0].mm(s[1].t()), s[0].t().mm(grad[0])};
  }
};

}  // namespace

TEST_CASE("gradient accumulation: the same scales, skipped steps and parameters as torch.amp.GradScaler") {
  const auto* doc = python_trace();
  if (!doc) return;
  const auto& d = (*doc)["accumulation"];
  const auto& cfg = d["config"];
  const int64_t micro = cfg["micro"], mb = cfg["micro_batch"];
  Params p = leaves(d["init"]);
  const auto x = tensor(d["x"]), y = tensor(d["y"]);
  torch::optim::SGD opt(p, torch::optim::SGDOptions(cfg["lr"].get<double>()));
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>(),
                                   .growth_interval = cfg["growth_interval"].get<int64_t>()});
  int skipped = 0, b = 0;
  for (const auto& want : d["trace"]) {
    CAPTURE(b);
    opt.zero_grad();
    for (int64_t m = 0; m < micro; ++m) {
      const int64_t k = (b * micro + m) * mb;
      torch::Tensor loss;
      {
        amp::Autocast ac(kDevice, torch::kHalf);
        loss = torch::mse_loss(mlp(p, x.narrow(0, k, mb)), y.narrow(0, k, mb)) / static_cast<double>(micro);
      }
      scaler.scale(loss).backward();
    }
    const bool stepped = scaler.step(opt);
    scaler.update();
    skipped += !stepped;
    CHECK(stepped == want["stepped"].get<bool>());
    CHECK(scaler.get_scale() == want["scale"].get<double>());
    CHECK(scaler.state_dict().growth_tracker == want["growth_tracker"].get<int64_t>());
    ++b;
  }
  CHECK(skipped >= 2);  // the trace really exercised back-off
  check_params(p, d["final"]);
}

TEST_CASE("gradient penalty: the same penalties, scales and parameters as the Python recipe") {
  const auto* doc = python_trace();
  if (!doc) return;
  const auto& d = (*doc)["penalty"];
  const auto& cfg = d["config"];
  Params p = leaves(d["init"]);
  const auto x = tensor(d["x"]), y = tensor(d["y"]);
  torch::optim::SGD opt(p, torch::optim::SGDOptions(cfg["lr"].get<double>()));
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>()});
  int step = 0;
  for (const auto& want : d["trace"]) {
    CAPTURE(step++);
    opt.zero_grad();
    torch::Tensor loss, penalty;
    {
      amp::Autocast ac(kDevice, torch::kHalf);
      loss = torch::mse_loss(mlp(p, x), y);
    }
    auto scaled =
        torch::autograd::grad({scaler.scale(loss)}, p, {}, /*retain_graph=*/true, /*create_graph=*/true);
    const double inv_scale = 1.0 / scaler.get_scale();
    {
      amp::Autocast ac(kDevice, torch::kHalf);
      penalty = torch::zeros({}, loss.options());
      for (const auto& g : scaled) penalty = penalty + (g * inv_scale).pow(2).sum();
      penalty = penalty.sqrt();
      loss = loss + penalty;
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    CHECK(penalty.item<double>() == doctest::Approx(want["penalty"].get<double>()).epsilon(kRel));
    CHECK(scaler.get_scale() == want["scale"].get<double>());
  }
  check_params(p, d["final"]);
}

TEST_CASE("several models and optimizers, one scaler: the same per-optimizer skips, scale and parameters") {
  const auto* doc = python_trace();
  if (!doc) return;
  const auto& d = (*doc)["multiple"];
  const auto& cfg = d["config"];
  Params m0 = leaves(d["init0"]), m1 = leaves(d["init1"]);
  const auto x = tensor(d["x"]), y = tensor(d["y"]);
  const double lr = cfg["lr"].get<double>();
  torch::optim::SGD opt0(m0, torch::optim::SGDOptions(lr)), opt1(m1, torch::optim::SGDOptions(lr));
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>()});
  int64_t s = 0;
  int skipped1 = 0;
  for (const auto& want : d["trace"]) {
    CAPTURE(s);
    opt0.zero_grad();
    opt1.zero_grad();
    torch::Tensor loss0, loss1;
    {
      amp::Autocast ac(kDevice, torch::kHalf);
      const auto out0 = torch::linear(x[s], m0[0], m0[1]), out1 = torch::linear(x[s], m1[0], m1[1]);
      loss0 = torch::mse_loss(2 * out0 + 3 * out1, y[s]);
      loss1 = torch::mse_loss(3 * out0 - 5 * out1, y[s]);
    }
    scaler.scale(loss0).backward({}, /*retain_graph=*/true);
    scaler.scale(loss1).backward();
    if (s == cfg["inject_at"].get<int64_t>())
      m1[0].mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    scaler.unscale_(opt0);
    const auto w0 = m0[0].detach().clone(), w1 = m1[0].detach().clone();
    scaler.step(opt0);
    scaler.step(opt1);
    scaler.update();
    CHECK(changed(w0, m0[0]) == want["stepped0"].get<bool>());
    CHECK(changed(w1, m1[0]) == want["stepped1"].get<bool>());
    CHECK(scaler.get_scale() == want["scale"].get<double>());
    skipped1 += !changed(w1, m1[0]);
    ++s;
  }
  CHECK(skipped1 == 1);  // the injected inf was really seen
  check_params(m0, d["final0"]);
  check_params(m1, d["final1"]);
}

TEST_CASE("CustomFwd/CustomBwd give custom_fwd/custom_bwd's outputs, dtypes and gradients") {
  const auto* doc = python_trace();
  if (!doc) return;
  const auto& d = (*doc)["custom"];
  const auto x = tensor(d["x"]), w = tensor(d["w"]);
  for (const char* name : {"row_norm", "matmul"}) {
    CAPTURE(name);
    const auto leaf = w.clone().requires_grad_(true);
    torch::Tensor value;
    {
      amp::Autocast ac(kDevice, torch::kHalf);
      const auto h = x.mm(leaf);
      value = std::string(name) == "row_norm"
                  ? RowNorm::apply(h)
                  : MatMul::apply(torch::tanh(h.narrow(1, 0, 8)), leaf.narrow(1, 0, 8));
    }
    value.sum().backward();
    const std::string dtype = d[name]["dtype"];
    CHECK(std::string(value.scalar_type() == torch::kHalf ? "torch.float16" : "torch.float32") == dtype);
    CHECK(max_rel(value, tensor(d[name]["value"])) <= kRel);
    CHECK(max_rel(leaf.grad(), tensor(d[name]["grad"])) <= kRel);
  }
}

}  // namespace test_parity_recipes
