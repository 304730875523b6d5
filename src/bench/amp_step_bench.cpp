// amp-lab-bench: times one AMP training step in C++ (amp::Autocast + amp::GradScaler) and prints JSON.
// scripts/bench_amp_step.py is its Python twin (torch.autocast + torch.amp.GradScaler): same cases, modes,
// flags, initialisation and JSON; scripts/bench runs the two interleaved and compares them.
//
//   amp-lab-bench --case recipe|tiny|scaler-overhead --mode fp32|bf16|fp16 [--device cpu|cuda]
//                 [--steps N] [--warmup N] [--threads N] [--seed N] [--max-seconds S]
//
// --max-seconds stops the timed loop early (after at least 3 steps) once that much wall time has passed,
// so a run on a busy machine stays bounded; "steps_done" says how many were timed.
//
// Cases:
//   recipe           PyTorch's AMP recipe MLP (Linear, ReLU, Linear, ReLU, Linear; MSE; SGD lr 1e-3),
//                    scaled to the device: width 1024 batch 256 on the CPU, width 4096 batch 512 on CUDA.
//   tiny             the same MLP at width 256, batch 64: bound by per-op overhead, not arithmetic.
//   scaler-overhead  50 x Linear(64) (100 parameter tensors), batch 32. Steps alternate: even steps time
//                    scale(loss) + unscale_ + step + update with the scaler on, odd steps time a plain
//                    optimizer.step(); overhead = median(scaler calls) - median(plain step).
// Modes: fp32 (autocast off, scaler off), bf16 (autocast bf16, scaler off), fp16 (autocast fp16 + scaler).
//
// Identical to the Python side: weights and data come from torch's CPU generator after manual_seed(seed),
// drawn in the same order (per layer: weight then bias, uniform in +-1/sqrt(fan_in); then x, y from
// randn), then moved to the device. The JSON carries checksums (sum of inputs, the loss before training,
// the sum of the weights after the last step) so scripts/bench can show both sides computed the same thing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "amp/autocast.h"
#include "amp/grad_scaler.h"
#include "lab/libtorch.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t width;
  int64_t batch;
  int64_t layers;
};

Shape shape_of(const std::string& name, const torch::Device& device) {
  if (name == "recipe") return device.is_cuda() ? Shape{4096, 512, 3} : Shape{1024, 256, 3};
  if (name == "tiny") return {256, 64, 3};
  if (name == "scaler-overhead") return {64, 32, 50};
  throw std::invalid_argument("--case must be recipe, tiny or scaler-overhead, got '" + name + "'");
}

// The recipe's make_model(): Linear layers with a ReLU between each pair (nn.Sequential on the Python side).
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t width, int64_t layers) {
    for (int64_t i = 0; i < layers; ++i)
      linears.push_back(register_module("linear" + std::to_string(i), torch::nn::Linear(width, width)));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < linears.size(); ++i) {
      x = linears[i]->forward(x);
      if (i + 1 < linears.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> linears;
};
TORCH_MODULE(Mlp);

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double sum_of(const std::vector<torch::Tensor>& tensors) {
  double s = 0.0;
  for (const auto& t : tensors) s += t.detach().to(torch::kCPU, torch::kFloat64).sum().item<double>();
  return s;
}

int run(const cxxopts::ParseResult& args) {
  const std::string case_name = args["case"].as<std::string>();
  const std::string mode = args["mode"].as<std::string>();
  const std::string device_name = args["device"].as<std::string>();
  const int64_t steps = args["steps"].as<int64_t>();
  const int64_t warmup = args["warmup"].as<int64_t>();
  const int threads = args["threads"].as<int>();
  const uint64_t seed = args["seed"].as<uint64_t>();
  const double max_seconds = args["max-seconds"].as<double>();

  if (mode != "fp32" && mode != "bf16" && mode != "fp16")
    throw std::invalid_argument("--mode must be fp32, bf16 or fp16, got '" + mode + "'");
  if (device_name != "cpu" && device_name != "cuda")
    throw std::invalid_argument("--device must be cpu or cuda, got '" + device_name + "'");
  if (steps < 1 || warmup < 0 || threads < 1)
    throw std::invalid_argument("need --steps >= 1, --warmup >= 0, --threads >= 1");
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  if (device.is_cuda() && !torch::cuda::is_available())
    throw std::invalid_argument("--device cuda: no CUDA device is available");
  const bool overhead_case = case_name == "scaler-overhead";
  const Shape shape = shape_of(case_name, device);

  torch::set_num_threads(threads);
  const bool cuda = device.is_cuda();
  auto sync = [&] {
    if (cuda) torch::cuda::synchronize();
  };

  // Weights and data: the CPU generator, in a fixed order, then to the device (see the header).
  torch::manual_seed(seed);
  Mlp model(shape.width, shape.layers);
  {
    torch::NoGradGuard no_grad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(shape.width));
    for (auto& lin : model->linears) {
      lin->weight.copy_(torch::rand({shape.width, shape.width}) * (2 * bound) - bound);
      lin->bias.copy_(torch::rand({shape.width}) * (2 * bound) - bound);
    }
  }
  torch::Tensor x = torch::randn({shape.batch, shape.width});
  torch::Tensor y = torch::randn({shape.batch, shape.width});
  const double input_checksum = sum_of(model->parameters()) + sum_of({x, y});
  model->to(device);
  x = x.to(device);
  y = y.to(device);

  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(1e-3));
  const bool use_autocast = mode != "fp32";
  const c10::ScalarType low = mode == "fp16" ? torch::kHalf : torch::kBFloat16;
  // The scaler only for fp16; the overhead case always has it on (that is what it measures).
  amp::GradScaler scaler(device, amp::GradScalerOptions{.enabled = mode == "fp16" || overhead_case});

  auto forward_loss = [&] {
    amp::Autocast ac(device, low, /*enabled=*/use_autocast);
    return torch::mse_loss(model->forward(x), y);
  };

  double initial_loss;
  {
    torch::NoGradGuard no_grad;
    initial_loss = forward_loss().to(torch::kFloat64).item<double>();
  }

  // The training step, written once for all modes: a disabled scaler passes scale() through,
  // step() just steps and update() does nothing.
  auto train_step = [&] {
    torch::Tensor loss = forward_loss();
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    opt.zero_grad();  // set_to_none, as Python's default
  };

  // The overhead case: a scaled step timing only the scaler's calls, and a plain step timing opt.step().
  auto scaled_step_timed = [&]() -> double {
    torch::Tensor loss = forward_loss();
    sync();
    auto t0 = Clock::now();
    torch::Tensor scaled = scaler.scale(loss);
    sync();
    double ms = ms_since(t0);
    scaled.backward();
    sync();
    t0 = Clock::now();
    scaler.unscale_(opt);
    scaler.step(opt);
    scaler.update();
    sync();
    ms += ms_since(t0);
    opt.zero_grad();
    return ms;
  };
  auto plain_step_timed = [&]() -> double {
    torch::Tensor loss = forward_loss();
    loss.backward();
    sync();
    const auto t0 = Clock::now();
    opt.step();
    sync();
    const double ms = ms_since(t0);
    opt.zero_grad();
    return ms;
  };

  nlohmann::json out;
  out["impl"] = "cpp";
  out["case"] = case_name;
  out["mode"] = mode;
  out["device"] = device_name;
  out["threads"] = torch::get_num_threads();
  out["steps"] = steps;
  out["warmup"] = warmup;
  out["seed"] = seed;
  out["shape"] = {{"width", shape.width}, {"batch", shape.batch}, {"layers", shape.layers}};
  out["param_tensors"] = model->parameters().size();
  out["torch"] = TORCH_VERSION;
  out["max_seconds"] = max_seconds;
  // The time budget: true once at least 3 steps (or all) are done and max_seconds have passed.
  auto over_budget = [&](Clock::time_point start, size_t done) {
    return max_seconds > 0 && done >= std::min<size_t>(3, steps) && ms_since(start) >= 1e3 * max_seconds;
  };

  double params_after_warmup = 0.0;  // untimed; the timed loop may stop early on a time budget
  if (!overhead_case) {
    for (int64_t i = 0; i < warmup; ++i) train_step();
    params_after_warmup = sum_of(model->parameters());
    std::vector<double> ms;
    ms.reserve(steps);
    const int64_t syncs0 = scaler.host_syncs();
    const auto start = Clock::now();
    for (int64_t i = 0; i < steps && !over_budget(start, ms.size()); ++i) {
      sync();
      const auto t0 = Clock::now();
      train_step();
      sync();
      ms.push_back(ms_since(t0));
    }
    out["steps_done"] = ms.size();
    out["step_ms"] = ms;
    out["median_ms"] = median(ms);
    out["host_syncs_per_step"] =
        static_cast<double>(scaler.host_syncs() - syncs0) / static_cast<double>(ms.size());
  } else {
    for (int64_t i = 0; i < warmup; ++i) {
      scaled_step_timed();
      plain_step_timed();
    }
    params_after_warmup = sum_of(model->parameters());
    std::vector<double> scaler_ms, plain_ms;
    int64_t syncs = 0;
    const auto start = Clock::now();
    for (int64_t i = 0; i < steps && !over_budget(start, scaler_ms.size()); ++i) {
      const int64_t s0 = scaler.host_syncs();
      scaler_ms.push_back(scaled_step_timed());
      syncs += scaler.host_syncs() - s0;
      plain_ms.push_back(plain_step_timed());
    }
    out["steps_done"] = scaler_ms.size();
    out["scaler_ms"] = scaler_ms;
    out["plain_step_ms"] = plain_ms;
    out["scaler_median_ms"] = median(scaler_ms);
    out["plain_step_median_ms"] = median(plain_ms);
    out["overhead_ms"] = median(scaler_ms) - median(plain_ms);
    out["host_syncs_per_step"] = static_cast<double>(syncs) / static_cast<double>(scaler_ms.size());
  }
  out["host_syncs_counted"] =
      "amp::GradScaler::host_syncs(): every .item() the scaler makes, over the timed steps";
  out["checksum"] = {{"inputs", input_checksum},
                     {"initial_loss", initial_loss},
                     {"params_after_warmup", params_after_warmup},
                     {"final_params", sum_of(model->parameters())},
                     {"final_scale", scaler.get_scale()}};
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options("amp-lab-bench",
                           "Times one AMP training step (amp::Autocast + amp::GradScaler); prints JSON");
  options.add_options()("case", "recipe, tiny or scaler-overhead",
                        cxxopts::value<std::string>()->default_value("tiny"))(
      "mode", "fp32, bf16 or fp16 (fp16 with the GradScaler)",
      cxxopts::value<std::string>()->default_value("fp32"))(
      "device", "cpu or cuda", cxxopts::value<std::string>()->default_value("cpu"))(
      "steps", "timed steps", cxxopts::value<int64_t>()->default_value("50"))(
      "warmup", "untimed steps first", cxxopts::value<int64_t>()->default_value("5"))(
      "threads", "intra-op threads (torch::set_num_threads)", cxxopts::value<int>()->default_value("2"))(
      "seed", "seed of the CPU generator the weights and data come from",
      cxxopts::value<uint64_t>()->default_value("0"))(
      "max-seconds", "stop timing after this many seconds (at least 3 steps); 0: no limit",
      cxxopts::value<double>()->default_value("0"))("h,help", "this help");
  try {
    const auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help() << "\n";
      return 0;
    }
    return run(args);
  } catch (const std::invalid_argument& e) {
    std::cerr << "amp-lab-bench: " << e.what() << "\n";
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "amp-lab-bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    std::cerr << "amp-lab-bench: " << what << "\n";
    return 3;
  }
}
