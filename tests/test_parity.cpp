// Parity with PyTorch: scripts in tests/parity/ drive torch.amp.GradScaler("cpu") through scripted runs and
// write their traces; each test here replays the same script with amp::GradScaler and requires the same
// trace: skip decisions, scales and growth trackers exactly, and the parameters bitwise where the
// arithmetic is the same (SGD, and the scaler's own unscale), within a measured bound where it is not (Adam).
// tests/test_parity_cuda.cpp includes this file with AMP_LAB_PARITY_CUDA defined: the same traces on CUDA,
// against torch.amp.GradScaler("cuda").
//
// Without a Python torch, or with one whose version differs from the linked LibTorch, the tests print
// "SKIPPED: <why>" (ctest reports a skip); under CI=true that is a failure instead. On CUDA without a CUDA
// device they print "SKIPPED: no CUDA device ..." whether under CI or not.
// AMP_LAB_PYTHON in the environment overrides the Python found at configure time.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "amp/grad_scaler.h"
#include "amp_lab_paths.h"
#include "lab/libtorch.h"

namespace test_parity {

namespace {

#ifdef AMP_LAB_PARITY_CUDA
const torch::Device kDevice(torch::kCUDA);
#else
const torch::Device kDevice(torch::kCPU);
#endif

const std::string kLinkedTorch = std::to_string(TORCH_VERSION_MAJOR) + "." +
                                 std::to_string(TORCH_VERSION_MINOR) + "." +
                                 std::to_string(TORCH_VERSION_PATCH);

torch::Tensor to_tensor(const nlohmann::json& rows, torch::ScalarType dtype = torch::kFloat) {
  std::vector<double> flat;
  int64_t n_rows = 0;
  for (const auto& row : rows) {
    ++n_rows;
    for (double v : row) flat.push_back(v);
  }
  return torch::tensor(flat, torch::kDouble).view({n_rows, -1}).to(kDevice, dtype);
}

float parse_value(const std::string& s) {
  if (s == "inf") return std::numeric_limits<float>::infinity();
  if (s == "-inf") return -std::numeric_limits<float>::infinity();
  if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
  return std::stof(s);
}

std::string run_and_capture(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// Why the reference cannot run here ("" when it can). Outside CI that is a visible skip; under CI a failure.
std::string reference_unavailable(const std::string& python) {
  if (python.empty()) return "no Python configured (scripts/setup provides one)";
  const std::string version =
      run_and_capture("\"" + python + "\" -c 'import torch; print(torch.__version__)' 2>/dev/null");
  if (version.empty()) return "no Python with torch at '" + python + "' (scripts/setup provides one)";
  const std::string base = version.substr(0, version.find('+'));
  if (base != kLinkedTorch)
    return "Python torch " + version + " at '" + python + "' differs from the linked LibTorch " +
           kLinkedTorch;
  if (kDevice.is_cuda() &&
      run_and_capture("\"" + python + "\" -c 'import torch; print(torch.cuda.is_available())' 2>/dev/null") !=
          "True")
    return "Python torch " + version + " at '" + python + "' sees no CUDA device";
  return "";
}

// Runs tests/parity/<script> and returns its trace; nullopt (with the reason printed) when it cannot run.
std::optional<nlohmann::json> python_trace(const std::string& script) {
  if (kDevice.is_cuda() && !torch::cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device visible to this LibTorch (the trace on CUDA needs a GPU)\n";
    return std::nullopt;
  }
  const char* env_python = std::getenv("AMP_LAB_PYTHON");
  const std::string python = env_python && *env_python ? env_python : AMP_LAB_PYTHON;
  const char* ci = std::getenv("CI");
  const bool in_ci = ci && std::strcmp(ci, "true") == 0;
  if (const std::string why = reference_unavailable(python); !why.empty()) {
    if (in_ci) FAIL("CI=true and the parity reference cannot run: " << why);
    std::cout << "SKIPPED: " << why << "; the C++ side was not compared\n";
    return std::nullopt;
  }
  const auto out =
      std::filesystem::path(AMP_LAB_BINARY_DIR) / ("parity_" + script + "_" + kDevice.str() + ".json");
  const std::string cmd = "\"" + python + "\" \"" AMP_LAB_SOURCE_DIR "/tests/parity/" + script + "\" \"" +
                          out.string() + "\" " + kDevice.str() + " 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  auto doc = nlohmann::json::parse(in);
  CHECK(doc["torch_version"].get<std::string>().rfind(kLinkedTorch, 0) == 0);
  CHECK(doc["device"].get<std::string>() == kDevice.str());
  return doc;
}

// Distance in units in the last place between two floats of the same type (0: bitwise equal).
template <typename F>
int64_t ulps(F a, F b) {
  using I = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  auto ordered = [](F v) {
    I i;
    std::memcpy(&i, &v, sizeof v);
    return i < 0 ? std::numeric_limits<I>::min() - i : i;
  };
  return std::llabs(static_cast<int64_t>(ordered(a)) - static_cast<int64_t>(ordered(b)));
}

// The largest ulp distance between a parameter and the reference's values for it, in the parameter's dtype.
int64_t max_ulps(const torch::Tensor& param, const nlohmann::json& want) {
  const auto have = param.detach().flatten().contiguous().cpu();
  REQUIRE(static_cast<size_t>(have.numel()) == want.size());
  int64_t worst = 0;
  for (int64_t i = 0; i < have.numel(); ++i) {
    if (have.scalar_type() == torch::kDouble)
      worst = std::max(worst, ulps(have[i].item<double>(), want[i].get<double>()));
    else
      worst = std::max(worst, ulps(have[i].item<float>(), static_cast<float>(want[i].get<double>())));
  }
  return worst;
}

void copy_values(const torch::Tensor& param, const nlohmann::json& values) {
  torch::NoGradGuard no_grad;
  param.copy_(torch::tensor(values.get<std::vector<double>>(), torch::kDouble).view_as(param));
}

}  // namespace

TEST_CASE("amp::GradScaler reproduces torch.amp.GradScaler's trace step for step") {
  const auto doc = python_trace("grad_scaler_trace.py");
  if (!doc) return;
  const auto& cfg = (*doc)["config"];

  torch::nn::Sequential model(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  model->to(kDevice);
  auto params = model->parameters();
  REQUIRE(params.size() == (*doc)["initial_params"].size());
  for (size_t i = 0; i < params.size(); ++i) copy_values(params[i], (*doc)["initial_params"][i]);
  const auto x = to_tensor((*doc)["x"]), y = to_tensor((*doc)["y"]);
  torch::optim::SGD opt(
      model->parameters(),
      torch::optim::SGDOptions(cfg["lr"].get<double>()).momentum(cfg["momentum"].get<double>()));
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>(),
                                   .growth_factor = cfg["growth_factor"].get<double>(),
                                   .backoff_factor = cfg["backoff_factor"].get<double>(),
                                   .growth_interval = cfg["growth_interval"].get<int64_t>()});
  std::map<int, float> inject;
  for (const auto& item : cfg["inject"])
    inject[item["step"].get<int>()] = parse_value(item["value"].get<std::string>());

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
    CHECK(static_cast<double>(loss.item<float>()) == expected["loss"].get<double>());
  }
  CHECK(skipped >= 4);  // the run really exercised back-off (natural overflows and injected inf/NaN)

  for (size_t i = 0; i < params.size(); ++i) {
    CAPTURE(i);
    CHECK(max_ulps(params[i], (*doc)["final_params"][i]) == 0);  // the same arithmetic: bitwise equal
  }
}

TEST_CASE(
    "two models, two optimizers, two dtypes, accumulation and mid-run changes match torch.amp step for "
    "step") {
  const auto doc = python_trace("grad_scaler_trace_multi.py");
  if (!doc) return;
  const auto& cfg = (*doc)["config"];
  const int64_t accum = cfg["accum"].get<int64_t>(), batch = cfg["batch"].get<int64_t>();

  // Bounds for what Adam touches: LibTorch's Adam updates its moments with mul_/add_, Python's with lerp_,
  // so the last bits may differ. Measured on this run: at most 6 ulps (params) and 1 ulp (losses).
  constexpr int64_t kAdamMaxUlps = 8;
  constexpr int64_t kLossMaxUlps = 2;
  // Model A: float32, Adam, first bias frozen. Model B: a float64 Linear and a float32 gain, SGD + momentum.
  torch::nn::Sequential model_a(torch::nn::Linear(4, 6), torch::nn::ReLU(), torch::nn::Linear(6, 2));
  torch::nn::Linear linear_b(4, 2);
  linear_b->to(torch::kDouble);
  model_a->to(kDevice);
  linear_b->to(kDevice);
  auto gain = torch::ones({2}, kDevice).requires_grad_();
  model_a[0]->as<torch::nn::Linear>()->bias.requires_grad_(false);
  std::vector<torch::Tensor> params_a = model_a->parameters(), params_b = linear_b->parameters();
  params_b.push_back(gain);
  std::vector<torch::Tensor> all = params_a;
  all.insert(all.end(), params_b.begin(), params_b.end());
  REQUIRE(all.size() == (*doc)["initial_params"].size());
  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    REQUIRE((*doc)["initial_params"][i]["dtype"] ==
            (all[i].scalar_type() == torch::kDouble ? "torch.float64" : "torch.float32"));
    copy_values(all[i], (*doc)["initial_params"][i]["values"]);
  }
  const auto x = to_tensor((*doc)["x"]), y_a = to_tensor((*doc)["y_a"]), y_b = to_tensor((*doc)["y_b"]);
  torch::optim::Adam opt_a(params_a, torch::optim::AdamOptions(cfg["lr_adam"].get<double>()));
  torch::optim::SGD opt_b(
      params_b,
      torch::optim::SGDOptions(cfg["lr_sgd"].get<double>()).momentum(cfg["momentum"].get<double>()));
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>(),
                                   .growth_factor = cfg["growth_factor"].get<double>(),
                                   .backoff_factor = cfg["backoff_factor"].get<double>(),
                                   .growth_interval = cfg["growth_interval"].get<int64_t>()});

  auto steps_of = [](const nlohmann::json& list) {
    std::set<int> s;
    for (const auto& v : list) s.insert(v.get<int>());
    return s;
  };
  auto by_step = [](const nlohmann::json& list) {
    std::map<int, nlohmann::json> m;
    for (const auto& v : list) m[v["step"].get<int>()] = v;
    return m;
  };
  const auto nan_loss = steps_of(cfg["nan_loss"]), inf_grad_b = steps_of(cfg["inf_grad_b"]);
  const auto update_float = by_step(cfg["update_float"]), update_tensor = by_step(cfg["update_tensor"]);
  const auto load_state = by_step(cfg["load_state"]), setters = by_step(cfg["setters"]);

  int skipped_a = 0, skipped_b = 0;
  int64_t max_loss_ulps = 0;
  for (const auto& expected : (*doc)["trace"]) {
    const int step = expected["step"].get<int>();
    CAPTURE(step);
    if (setters.count(step)) {
      const auto& s = setters.at(step);
      scaler.set_growth_factor(s["growth_factor"].get<double>());
      scaler.set_backoff_factor(s["backoff_factor"].get<double>());
      scaler.set_growth_interval(s["growth_interval"].get<int64_t>());
    }
    if (load_state.count(step)) {
      const auto& s = load_state.at(step);
      scaler.load_state_dict({.scale = s["scale"].get<double>(),
                              .growth_factor = s["growth_factor"].get<double>(),
                              .backoff_factor = s["backoff_factor"].get<double>(),
                              .growth_interval = s["growth_interval"].get<int64_t>(),
                              .growth_tracker = s["_growth_tracker"].get<int64_t>()});
    }
    opt_a.zero_grad();
    opt_b.zero_grad();
    for (int64_t mb = 0; mb < accum; ++mb) {
      CAPTURE(mb);
      const auto rows = torch::indexing::Slice(mb * batch, (mb + 1) * batch);
      const auto xs = x.index({rows});
      auto loss_a = torch::mse_loss(model_a->forward(xs), y_a.index({rows}), torch::Reduction::Sum);
      auto out_b = linear_b->forward(xs.to(torch::kDouble)).to(torch::kFloat) * gain;
      auto loss_b = torch::mse_loss(out_b, y_b.index({rows}), torch::Reduction::Sum);
      auto loss = (loss_a + loss_b) / static_cast<double>(accum);
      if (nan_loss.count(step) && mb == 1) loss = loss * std::numeric_limits<double>::quiet_NaN();
      const auto& want = expected["losses"][mb];  // null: the reference's loss was NaN
      if (want.is_null())
        CHECK(std::isnan(loss.item<float>()));
      else
        max_loss_ulps =
            std::max(max_loss_ulps, ulps(loss.item<float>(), static_cast<float>(want.get<double>())));
      scaler.scale(loss).backward();
    }
    if (inf_grad_b.count(step)) gain.mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    if (step % 3 == 0) {
      scaler.unscale_(opt_a);
      torch::nn::utils::clip_grad_norm_(model_a->parameters(), cfg["clip_norm"].get<double>());
    }
    const bool stepped_a = scaler.step(opt_a);
    const bool stepped_b = scaler.step(opt_b);
    if (update_float.count(step))
      scaler.update(update_float.at(step)["scale"].get<double>());
    else if (update_tensor.count(step))
      scaler.update(torch::tensor(update_tensor.at(step)["scale"].get<double>(), torch::kFloat).to(kDevice));
    else
      scaler.update();
    skipped_a += !stepped_a;
    skipped_b += !stepped_b;
    CHECK(stepped_a == expected["stepped_a"].get<bool>());
    CHECK(stepped_b == expected["stepped_b"].get<bool>());
    CHECK(scaler.get_scale() == expected["scale"].get<double>());
    CHECK(scaler.state_dict().growth_tracker == expected["growth_tracker"].get<int64_t>());
  }
  // The losses follow model A's parameters, so they carry Adam's last-bit differences (bound measured).
  std::cout << "parity multi: losses max ulps " << max_loss_ulps << "\n";
  CHECK(max_loss_ulps <= kLossMaxUlps);
  // The schedule really skipped: natural overflow, inf in B only, NaN in the loss.
  CHECK(skipped_a >= 2);
  CHECK(skipped_b > skipped_a);

  // SGD (B, float64 and float32) does the same arithmetic as Python's single-tensor SGD: bitwise.

  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    const int64_t d = max_ulps(all[i], (*doc)["final_params"][i]["values"]);
    std::cout << "parity multi: param " << i << " (" << (i < params_a.size() ? "Adam" : "SGD") << ", "
              << all[i].scalar_type() << ") max ulps " << d << "\n";
    if (i < params_a.size())
      CHECK(d <= kAdamMaxUlps);
    else
      CHECK(d == 0);
  }
}

TEST_CASE(
    "step(o0), update(), step(o1), update() in one iteration matches torch.amp: the scales, trackers, skips, "
    "the mis-unscaling factor and the parameters") {
  const auto doc = python_trace("grad_scaler_trace_two_updates.py");
  if (!doc) return;
  const auto& cfg = (*doc)["config"];

  torch::nn::Linear model0(4, 3), model1(4, 3);
  model0->to(kDevice);
  model1->to(kDevice);
  const auto params0 = model0->parameters(), params1 = model1->parameters();
  std::vector<torch::Tensor> all = params0;
  all.insert(all.end(), params1.begin(), params1.end());
  REQUIRE(all.size() == (*doc)["initial_params"].size());
  for (size_t i = 0; i < all.size(); ++i) copy_values(all[i], (*doc)["initial_params"][i]);
  const auto x = to_tensor((*doc)["x"]), y0 = to_tensor((*doc)["y0"]), y1 = to_tensor((*doc)["y1"]);
  const auto sgd = torch::optim::SGDOptions(cfg["lr"].get<double>()).momentum(cfg["momentum"].get<double>());
  torch::optim::SGD opt0(params0, sgd), opt1(params1, sgd);
  amp::GradScaler scaler(kDevice, {.init_scale = cfg["init_scale"].get<double>(),
                                   .growth_factor = cfg["growth_factor"].get<double>(),
                                   .backoff_factor = cfg["backoff_factor"].get<double>(),
                                   .growth_interval = cfg["growth_interval"].get<int64_t>()});
  auto steps_of = [](const nlohmann::json& list) {
    std::set<int> s;
    for (const auto& v : list) s.insert(v.get<int>());
    return s;
  };
  const auto inf_grad_0 = steps_of(cfg["inf_grad_0"]), inf_grad_1 = steps_of(cfg["inf_grad_1"]);

  std::set<double> factors;  // the factors optimizer 1's applied gradients were off by, over the run
  for (const auto& expected : (*doc)["trace"]) {
    const int step = expected["step"].get<int>();
    CAPTURE(step);
    opt0.zero_grad();
    opt1.zero_grad();
    auto loss0 = torch::mse_loss(model0->forward(x), y0, torch::Reduction::Sum);
    auto loss1 = torch::mse_loss(model1->forward(x), y1, torch::Reduction::Sum);
    CHECK(static_cast<double>(loss0.item<float>()) == expected["loss0"].get<double>());
    CHECK(static_cast<double>(loss1.item<float>()) == expected["loss1"].get<double>());
    const double scale_backward = scaler.get_scale();
    CHECK(scale_backward == expected["scale_backward"].get<double>());
    scaler.scale(loss0 + loss1).backward();
    if (inf_grad_0.count(step))
      params0[0].mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    if (inf_grad_1.count(step))
      params1[0].mutable_grad().view(-1)[0] = std::numeric_limits<float>::infinity();
    std::vector<torch::Tensor> correct1;
    for (const auto& p : params1) correct1.push_back(p.grad().detach() / scale_backward);

    const bool stepped0 = scaler.step(opt0);
    scaler.update();  // accepted, as in Python: optimizer 0 recorded an inf check
    CHECK(stepped0 == expected["stepped0"].get<bool>());
    CHECK(scaler.get_scale() == expected["scale_between"].get<double>());
    CHECK(scaler.state_dict().growth_tracker == expected["tracker_between"].get<int64_t>());
    const bool stepped1 = scaler.step(opt1);  // unscales by the scale update() just set
    scaler.update();
    CHECK(stepped1 == expected["stepped1"].get<bool>());
    CHECK(scaler.get_scale() == expected["scale"].get<double>());
    CHECK(scaler.state_dict().growth_tracker == expected["growth_tracker"].get<int64_t>());

    REQUIRE(expected["factor1"].is_null() == !stepped1);
    if (stepped1) {
      std::vector<torch::Tensor> ratios;
      for (size_t i = 0; i < params1.size(); ++i)
        ratios.push_back((params1[i].grad() / correct1[i]).flatten());
      const auto r = torch::cat(ratios);
      const double lo = r.min().item<double>(), hi = r.max().item<double>();
      CHECK(lo == expected["factor1"]["min"].get<double>());
      CHECK(hi == expected["factor1"]["max"].get<double>());
      if (lo == hi) factors.insert(lo);
    }
    REQUIRE(expected["params"].size() == all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      CAPTURE(i);
      CHECK(max_ulps(all[i], expected["params"][i]) == 0);  // SGD, the same arithmetic: bitwise, every step
    }
  }
  // The run met all three cases: a scale that stayed (1.0), a back-off (2.0x too large), a growth (0.5x).
  CHECK(factors == std::set<double>{0.5, 1.0, 2.0});
  const auto refused = (*doc)["third_update_refused"];
  REQUIRE(refused.is_string());
  // Python's message, after the library's uniform prefix.
  const std::string python_message = "amp::GradScaler: " + refused.get<std::string>();
  CHECK_THROWS_WITH_AS(scaler.update(), python_message.c_str(), amp::GradScalerError);
}

}  // namespace test_parity
