// Lab 05: 16-bit tensors take half the memory; whether they are faster depends on the hardware.
//
// Backs quiz question 5 ("What is a common benefit of using 16-bit values for supported training
// operations?"). Part 1 measures tensor memory from the tensors themselves (numel * element_size) for
// one training step of a small MLP (3 x Linear, ReLU, MSE, SGD, the PyTorch AMP recipe's shape scaled
// to the device): weights, gradients and activations in fp32, in pure 16-bit with an fp32 master copy,
// and under autocast (fp32 weights plus 16-bit copies of them). Part 2 times matmuls at a few sizes and
// the MLP's training step in fp32, autocast bf16 and autocast fp16 with amp::GradScaler: warm-up, then
// the median of several runs, as GFLOP/s (TFLOP/s on CUDA) and as a ratio to fp32. On CUDA it also
// times fp32 with TF32 on, and a fp16 matmul whose size is or is not a multiple of 8. CPU timings use
// one thread, so other work on a shared machine does not distort the fp32 vs 16-bit comparison.
// Checks cover only what holds everywhere (16-bit tensors take exactly half the bytes, the master copy
// costs 4 bytes per parameter, 16-bit output is less accurate); speed is reported, never asserted.
//
// Run alone:  build/bin/lab05_memory_throughput [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--flip]
// --flip: the "16-bit" tensors are kept in fp32 (autocast disabled, the 16-bit model stored in fp32),
//         so the half-the-bytes, master-copy and accuracy checks must FAIL; timings compare fp32 to fp32.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "lab/registry.h"

namespace {

constexpr int kLayers = 3;               // the recipe's 3 x Linear
constexpr double kLearningRate = 1e-3;   // SGD step size; the timing does not depend on it
constexpr double kMinRunMs = 20;         // a timed run repeats a fast call until it lasts this long
constexpr int kMaxCallsPerRun = 200;     // ... but at most this many times
constexpr int kCpuTimingThreads = 1;     // CPU timings on one thread: a busy, shared machine stalls
                                         // multi-threaded kernels and would distort fp32 vs 16-bit
constexpr int64_t kAlignedN = 4096;      // CUDA: fp16 matmul size that is a multiple of 8 ...
constexpr int64_t kUnalignedN = 4097;    // ... and one that is not (Tensor Cores want multiples of 8)

// Three Linear layers with ReLU between them; `saved` collects every layer output (the activations).
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(int64_t width) {
    for (int i = 0; i < kLayers; ++i)
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
  }
  torch::Tensor forward(torch::Tensor x, std::vector<torch::Tensor>* saved = nullptr) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (saved) saved->push_back(x);
      if (i + 1 == layers.size()) break;
      x = torch::relu(x);
      if (saved) saved->push_back(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

int64_t bytes(const std::vector<torch::Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
  return n;
}
std::vector<torch::Tensor> grads(Mlp& m) {
  std::vector<torch::Tensor> g;
  for (const auto& p : m->parameters()) g.push_back(p.grad());
  return g;
}
std::string mb(int64_t b) { return b == 0 ? "-" : lab::num(b / 1e6, 3); }

void sync(const lab::Context& ctx) {
  if (ctx.cuda()) torch::cuda::synchronize();
}

double elapsed_ms(const lab::Context& ctx, int calls, const std::function<void()>& fn) {
  sync(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  sync(ctx);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Warm-up calls, then the median of `reps` timed runs, in ms per call. A run repeats a fast call until
// it lasts about kMinRunMs, so a small matmul is not timed against the clock's and the pool's overhead.
double median_ms(const lab::Context& ctx, int warmup, int reps, const std::function<void()>& fn) {
  double one = 0;
  for (int i = 0; i < warmup; ++i) one = elapsed_ms(ctx, 1, fn);
  const int calls = std::clamp(static_cast<int>(kMinRunMs / std::max(one, 1e-3)), 1, kMaxCallsPerRun);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(elapsed_ms(ctx, calls, fn) / calls);
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

// "0.60x the speed of fp32 (slower)": honest words for a measured ratio of rates.
std::string speed_words(double ratio) {
  if (ratio > 1.05) return lab::num(ratio, 3) + "x the speed of fp32 (faster)";
  if (ratio < 0.95) return lab::num(ratio, 3) + "x the speed of fp32 (slower)";
  return lab::num(ratio, 3) + "x the speed of fp32 (about the same)";
}

// Native 16-bit matrix units named in /proc/cpuinfo, or "none listed" (or "unknown" off Linux).
std::string cpu_16bit_units() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return "unknown";
  std::string line, found;
  while (std::getline(in, line) && found.empty())
    if (line.rfind("flags", 0) == 0)
      for (const char* f : {"avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16"})
        if (line.find(std::string(" ") + f) != std::string::npos) found += (found.empty() ? "" : ", ") + std::string(f);
  return found.empty() ? "none listed" : found;
}

// Runs `undo` however the scope is left: restores the thread count and cuBLAS's TF32 switch.
struct Restore {
  std::function<void()> undo;
  ~Restore() { undo(); }
};

lab::Report run(const lab::Context& ctx) {
  lab::Report r("memory-throughput", "16-bit halves tensor memory; the speed-up depends on the hardware");
  const auto dev = ctx.device;
  const bool on = !ctx.flip;                                   // --flip: no 16-bit anywhere
  const auto low = on ? ctx.dtype : torch::kFloat;             // what "16-bit" tensors are stored in
  const std::string lp = lab::short_name(ctx.dtype) + (on ? "" : "*");
  const int64_t width = ctx.size(512, 4096, 128), batch = ctx.size(64, 512, 32);
  const std::vector<int64_t> sizes = ctx.quick ? std::vector<int64_t>{64, 128}
                                     : ctx.cuda() ? std::vector<int64_t>{1024, 4096, 8192}
                                                  : std::vector<int64_t>{128, 256};
  const int warmup = ctx.cuda() ? 3 : 1, reps = ctx.size(3, 10, 3);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(dev);
  const double unit = ctx.cuda() ? 1e12 : 1e9;  // FLOP/s per printed unit
  const std::string rate = ctx.cuda() ? "TFLOP/s" : "GFLOP/s";
  r.note("dtypes: fp32, " + lp + " (weights, activations, matmuls), fp32 master copy; MLP 3 x Linear(" +
         std::to_string(width) + "), batch " + std::to_string(batch));
  if (ctx.flip) r.note("--flip: " + lp + " tensors are stored in fp32 and autocast is disabled");

  // ---- Part 1: memory, from the tensors ----
  Mlp model(width);
  model->to(dev);
  const auto x = torch::randn({batch, width}, f32), y = torch::randn({batch, width}, f32);
  std::vector<torch::Tensor> act32, act16, act_ac, copies;
  torch::mse_loss(model->forward(x, &act32), y).backward();
  const auto params32 = model->parameters();
  const int64_t n_params = bytes(params32) / 4, p32 = bytes(params32), g32 = bytes(grads(model)), a32 = bytes(act32);
  // Pure 16-bit, as in the mixed-precision paper: 16-bit weights and grads, an fp32 master copy.
  Mlp model16(width);
  model16->to(dev, low);
  torch::mse_loss(model16->forward(x.to(low), &act16).to(torch::kFloat), y).backward();
  std::vector<torch::Tensor> master;
  for (const auto& p : model16->parameters()) master.push_back(p.detach().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true));
  const int64_t p16 = bytes(model16->parameters()), g16 = bytes(grads(model16)), a16 = bytes(act16), m32 = bytes(master);
  // Autocast: fp32 weights and grads; each Linear works on a 16-bit copy of its weight and bias.
  model->zero_grad();
  {
    amp::Autocast guard(dev, ctx.dtype, /*enabled=*/on);
    torch::mse_loss(model->forward(x, &act_ac), y).backward();
  }
  if (on)
    for (const auto& p : params32) copies.push_back(p.detach().to(ctx.dtype));
  const int64_t c_ac = bytes(copies), g_ac = bytes(grads(model)), a_ac = bytes(act_ac);
  // 16-bit is not more accurate: the network's output against a float64 forward pass.
  torch::Tensor ref = x.to(torch::kDouble);
  for (size_t i = 0; i < model->layers.size(); ++i) {
    const auto& l = model->layers[i];
    ref = torch::linear(ref, l->weight.to(torch::kDouble), l->bias.to(torch::kDouble));
    if (i + 1 < model->layers.size()) ref = torch::relu(ref);
  }
  const auto err = [&](const torch::Tensor& out) {
    return ((out.detach().to(torch::kDouble) - ref).abs().max() / ref.abs().max()).item<double>();
  };
  const double err32 = err(act32.back()), err_ac = err(act_ac.back());
  const int64_t t32 = p32 + g32 + a32, t16 = p16 + m32 + g16 + a16, t_ac = p32 + c_ac + g_ac + a_ac;

  r.section("Tensor memory of one training step, MB (numel x element_size of each tensor)");
  r.table("", {"tensors", "fp32", lp + " + fp32 master", "autocast " + lp})
      .row({"weights", mb(p32), mb(p16), mb(p32)})
      .row({"fp32 master copy", "-", mb(m32), "-"})
      .row({lp + " weight copies", "-", "-", mb(c_ac)})
      .row({"gradients", mb(g32), mb(g16), mb(g_ac)})
      .row({"activations (layer outputs)", mb(a32), mb(a16), mb(a_ac)})
      .row({"total", mb(t32), mb(t16), mb(t_ac)});
  r.observe("weight_bytes_ratio", lp + " weights / fp32 weights", double(p16) / p32, "x");
  r.observe("activation_bytes_ratio", lp + " activations / fp32 activations", double(a_ac) / a32, "x");
  r.observe("output_error_ratio", "MLP output error vs fp64: autocast / fp32", err_ac / err32, "x",
            lab::num(err_ac / err32, 3) + "x (" + lab::sci(err_ac) + " vs " + lab::sci(err32) + ")");
  r.observe("autocast_total_ratio", "autocast step total / fp32 step total", double(t_ac) / t32, "x");
  // Autocast saves half the activations (which grow with the batch) and pays for the weight copies.
  const double breakeven = a32 > a_ac ? double(c_ac) / (double(a32 - a_ac) / batch) : 0;
  r.observe("autocast_breakeven_batch", "batch above which autocast's total is smaller", breakeven, "",
            a32 > a_ac ? lab::num(breakeven, 3) : "never");

  // ---- Part 2: throughput ----
  const int threads = torch::get_num_threads();
  const bool tf32_before = at::globalContext().allowTF32CuBLAS();
  Restore restore{[&] {
    torch::set_num_threads(threads);
    if (ctx.cuda()) at::globalContext().setAllowTF32CuBLAS(tf32_before);
  }};
  if (!ctx.cuda()) torch::set_num_threads(kCpuTimingThreads);
  const auto per_s = [&](double flop, double ms) { return flop / (ms * 1e-3) / unit; };
  // Each mode: its name, whether autocast runs and in which dtype, GradScaler, TF32 for fp32 matmuls.
  struct Mode { std::string name; bool autocast; torch::ScalarType dtype; bool scaler, tf32; };
  std::vector<Mode> modes = {{"fp32", false, ctx.dtype, false, false},
                             {"bf16", on, torch::kBFloat16, false, false}, {"fp16", on, torch::kHalf, on, false}};
  if (ctx.cuda() && !amp::cuda_supports_bf16()) modes.erase(modes.begin() + 1);
  if (ctx.cuda()) modes.push_back({"tf32", false, ctx.dtype, false, on});  // TF32 on, from fp32 inputs
  if (ctx.flip) for (auto& m : modes) if (m.name != "fp32") m.name += "*";
  const auto set_tf32 = [&](const Mode& m) { if (ctx.cuda()) at::globalContext().setAllowTF32CuBLAS(m.tf32); };
  const auto label = [&](const Mode& m) { return m.name.rfind("tf32", 0) == 0 ? "fp32 with " + m.name : "autocast " + m.name; };

  std::vector<std::string> cols = {"n"};
  for (const auto& m : modes) cols.push_back(m.name);
  for (size_t i = 1; i < modes.size(); ++i) cols.push_back(modes[i].name + " vs fp32");
  r.section("Throughput in " + rate + ": median of " + std::to_string(reps) + " timed runs after warm-up");
  auto& mm_table = r.table("matmul n x n x n, autocast on fp32 inputs", cols);
  std::vector<double> mm_ratio(modes.size(), 0);
  for (int64_t n : sizes) {
    const auto a = torch::randn({n, n}, f32), b = torch::randn({n, n}, f32);
    std::vector<double> rates;
    for (const auto& m : modes) {
      set_tf32(m);
      rates.push_back(per_s(2.0 * n * n * n, median_ms(ctx, warmup, reps, [&] {
        amp::Autocast guard(dev, m.dtype, m.autocast);
        torch::mm(a, b);
      })));
    }
    std::vector<std::string> row = {std::to_string(n)};
    for (double v : rates) row.push_back(lab::num(v, 3));
    for (size_t i = 1; i < modes.size(); ++i) row.push_back(lab::num(mm_ratio[i] = rates[i] / rates[0], 3) + "x");
    mm_table.row(row);
  }
  if (ctx.cuda()) {  // Tensor Cores want every matmul dimension to be a multiple of 8.
    std::vector<double> rates;
    for (int64_t n : {kAlignedN, kUnalignedN}) {
      const auto a = torch::randn({n, n}, f32).to(torch::kHalf), b = torch::randn({n, n}, f32).to(torch::kHalf);
      rates.push_back(per_s(2.0 * n * n * n, median_ms(ctx, warmup, reps, [&] { torch::mm(a, b); })));
    }
    r.note("multiple of 8: fp16 mm at n=" + std::to_string(kAlignedN) + " " + lab::num(rates[0], 3) + " " + rate +
           ", at n=" + std::to_string(kUnalignedN) + " " + lab::num(rates[1], 3) + " " + rate);
  }

  auto& step_table = r.table("MLP training step: forward, MSE, backward, SGD", {"mode", "ms/step", rate, "vs fp32"});
  const double step_flop = 2.0 * batch * width * width * (kLayers + kLayers + (kLayers - 1));  // fwd, dW, dX
  double ms32 = 0;
  for (const auto& m : modes) {
    torch::manual_seed(ctx.seed);  // the same initial weights in every mode
    Mlp net(width);
    net->to(dev);
    set_tf32(m);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLearningRate));
    amp::GradScaler scaler(dev, amp::GradScalerOptions{.enabled = m.scaler});
    const double ms = median_ms(ctx, warmup, reps, [&] {
      opt.zero_grad();
      torch::Tensor loss;
      {
        amp::Autocast guard(dev, m.dtype, m.autocast);
        loss = torch::mse_loss(net->forward(x), y);
      }
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
    });
    if (m.name == "fp32") ms32 = ms;
    step_table.row({m.name + (m.scaler ? " + GradScaler" : ""), lab::num(ms, 3), lab::num(per_s(step_flop, ms), 3),
                    lab::num(ms32 / ms, 3) + "x"});
    if (m.name != "fp32")
      r.observe("mlp_" + m.name.substr(0, 4) + "_vs_fp32", "MLP step, " + label(m) + " on this " +
                (ctx.cuda() ? "GPU" : "CPU"), ms32 / ms, "x", speed_words(ms32 / ms));
  }
  for (size_t i = 1; i < modes.size(); ++i)
    r.observe("matmul_" + modes[i].name.substr(0, 4) + "_vs_fp32",
              "matmul n=" + std::to_string(sizes.back()) + ", " + label(modes[i]), mm_ratio[i], "x",
              speed_words(mm_ratio[i]));
  if (!ctx.cuda())
    r.note("CPU caveat: timed on " + std::to_string(kCpuTimingThreads) + " of " +
           std::to_string(std::thread::hardware_concurrency()) + " cores; native 16-bit matrix units in /proc/cpuinfo: " + cpu_16bit_units() + ".");
  r.note(std::string("Gains depend on hardware and workload") +
         (ctx.cuda() ? "" : ": a CPU without such units converts 16-bit math and can be slower than fp32") +
         ". No check asserts speed.");
  r.check(lp + " weights, gradients and activations each take exactly half the bytes of fp32",
          2 * p16 == p32 && 2 * g16 == g32 && 2 * a16 == a32 && 2 * a_ac == a32,
          "weights " + mb(p16) + " vs " + mb(p32) + ", grads " + mb(g16) + " vs " + mb(g32) + ", activations " +
              mb(a_ac) + " vs " + mb(a32) + " MB");
  r.check("the fp32 master copy costs 4 bytes per parameter, twice the " + lp + " weights",
          m32 == 4 * n_params && m32 == 2 * p16,
          std::to_string(m32) + " B for " + std::to_string(n_params) + " parameters; " + lp + " weights " +
              std::to_string(p16) + " B");
  r.check("16-bit does not raise accuracy: the autocast MLP output is further from fp64 than fp32's",
          err_ac > err32, "max error " + lab::sci(err_ac) + " vs " + lab::sci(err32) + " (share of max |output|)");
  return r;
}

}  // namespace

AMP_LAB_REGISTER("memory-throughput", /*question=*/5, "Memory and throughput of 16-bit training",
                 /*heading=*/"Bytes and speed of fp32 and 16-bit training steps", run,
                 /*provides=*/{"weight_bytes_ratio", "activation_bytes_ratio", "autocast_total_ratio",
                               "autocast_breakeven_batch", "output_error_ratio", "mlp_bf16_vs_fp32", "mlp_fp16_vs_fp32",
                               "matmul_bf16_vs_fp32", "matmul_fp16_vs_fp32"});
