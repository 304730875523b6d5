// Lab 05: 16-bit tensors take half the memory; whether they are faster depends on the hardware.
//
// Backs quiz question 5 ("What is a common benefit of using 16-bit values for supported training
// operations?"). Part 1 counts the bytes of one training step of a small MLP (3 x Linear, ReLU, MSE: the
// PyTorch AMP recipe's shape scaled to the device) from the tensors (numel x element_size): weights,
// gradients, Adam's state and activations in fp32, in pure 16-bit with an fp32 master copy, and under
// autocast; on CUDA it also measures the allocator's peak. Part 2 times matmuls in fp32, in 16-bit
// (16-bit kernel) and "via fp32" (convert, fp32 matmul, convert back), then the MLP's training step in
// fp32, autocast bf16 and autocast fp16 + amp::GradScaler (warm-up, median of several runs; one CPU
// thread). The report names the device and the native 16-bit units /proc/cpuinfo lists. Checks cover
// what holds everywhere (half the bytes; master copy +4 B and Adam +8 B per parameter; 16-bit is less
// accurate); speed is reported, never asserted.
//
// Run alone:  build/bin/lab05_memory_throughput [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--flip]
// --flip: the "16-bit" tensors are kept in fp32 (autocast disabled, the 16-bit model stored in fp32),
//         so every check must FAIL; timings compare fp32 to fp32.
#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "lab/hardware.h"
#include "lab/registry.h"
#include "lab/measure.h"
#include "lab/mlp.h"

namespace {

constexpr int kLayers = 3;              // the recipe's 3 x Linear
constexpr double kLearningRate = 1e-3;  // SGD and Adam step size; bytes and timings do not depend on it
constexpr int64_t kAlignedN = 4096;     // CUDA: fp16 matmul size that is a multiple of 8 ...
constexpr int64_t kUnalignedN = 4097;   // ... and one that is not (Tensor Cores want multiples of 8)
constexpr double kKernelBound = 0.8;    // "the kernel is the slow part": 16-bit mm below 0.8x via-fp32

constexpr auto bytes = lab::tensor_bytes;
constexpr auto grads = lab::grads;
constexpr auto mb = lab::mb_cell;

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
  const lab::Hardware hw = lab::hardware_of(dev);
  const std::string where = lab::describe_16bit_hardware(hw);
  r.note("dtypes: fp32, " + lp + " (weights, activations, matmuls), fp32 master copy; MLP 3 x Linear(" +
         std::to_string(width) + "), batch " + std::to_string(batch) + "; device: " + where);
  if (ctx.flip) r.note("--flip: " + lp + " tensors are stored in fp32 and autocast is disabled");

  // ---- Part 1: memory, counted from the tensors (and, on CUDA, the allocator's peak) ----
  lab::Mlp model(width, kLayers);
  model->to(dev);
  const auto x = torch::randn({batch, width}, f32), y = torch::randn({batch, width}, f32);
  std::vector<torch::Tensor> act32, act16, act_ac, copies;
  const auto peak32 = lab::peak_device_bytes(dev, [&] { torch::mse_loss(model->forward(x, &act32), y).backward(); });
  const auto params32 = model->parameters();
  const int64_t n_params = bytes(params32) / 4, p32 = bytes(params32), g32 = bytes(grads(params32)), a32 = bytes(act32);
  // Pure 16-bit, as in the mixed-precision paper: 16-bit weights and grads, an fp32 master copy that
  // Adam updates (so Adam's state is fp32 too).
  lab::Mlp model16(width, kLayers);
  model16->to(dev, low);
  const auto peak16 = lab::peak_device_bytes(dev, [&] {
    torch::mse_loss(model16->forward(x.to(low), &act16).to(torch::kFloat), y).backward();
  });
  std::vector<torch::Tensor> master;
  for (const auto& p : model16->parameters()) {
    master.push_back(p.detach().to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true).requires_grad_());
    master.back().mutable_grad() = p.grad().to(torch::kFloat);
  }
  const int64_t p16 = bytes(model16->parameters()), g16 = bytes(grads(model16->parameters())), a16 = bytes(act16);
  const int64_t m32 = bytes(master), adam = lab::adam_state_bytes(master, kLearningRate);
  // Autocast: fp32 weights and grads; each Linear works on a 16-bit copy of its weight and bias.
  model->zero_grad();
  const auto peak_ac = lab::peak_device_bytes(dev, [&] {
    amp::Autocast guard(dev, ctx.dtype, /*enabled=*/on);
    torch::mse_loss(model->forward(x, &act_ac), y).backward();
  });
  if (on)
    for (const auto& p : params32) copies.push_back(p.detach().to(ctx.dtype));
  const int64_t c_ac = bytes(copies), g_ac = bytes(grads(params32)), a_ac = bytes(act_ac);
  // 16-bit is not more accurate: the network's output against a float64 forward pass.
  const torch::Tensor ref = model->forward_fp64(x);
  const double err32 = lab::max_rel_error(act32.back(), ref), err_ac = lab::max_rel_error(act_ac.back(), ref);
  const int64_t t32 = p32 + g32 + adam + a32, t16 = p16 + m32 + g16 + adam + a16, t_ac = p32 + c_ac + g_ac + adam + a_ac;

  r.section("Memory of one training step with Adam, MB");
  r.table("computed from the tensors (numel x element_size); the last row measured by the allocator",
          {"tensors", "fp32", lp + " + fp32 master", "autocast " + lp})
      .row({"weights", mb(p32), mb(p16), mb(p32)})
      .row({"fp32 master copy", "-", mb(m32), "-"})
      .row({lp + " weight copies", "-", "-", mb(c_ac)})
      .row({"gradients", mb(g32), mb(g16), mb(g_ac)})
      .row({"Adam state (exp_avg, exp_avg_sq)", mb(adam), mb(adam), mb(adam)})
      .row({"activations (layer outputs)", mb(a32), mb(a16), mb(a_ac)})
      .row({"total (computed)", mb(t32), mb(t16), mb(t_ac)})
      .row({"peak of forward + backward (measured)", mb(peak32), mb(peak16), mb(peak_ac)});
  if (!ctx.cuda()) r.note("peak (measured): CUDA only; the CPU allocator keeps no statistics");
  r.observe("weight_bytes_ratio", lp + " weights / fp32 weights", double(p16) / p32, "x");
  r.observe("activation_bytes_ratio", lp + " activations / fp32 activations", double(a_ac) / a32, "x");
  r.observe("master_bytes_per_param", "fp32 master copy, bytes per parameter", double(m32) / n_params, " B");
  r.observe("adam_bytes_per_param", "Adam state, bytes per parameter", double(adam) / n_params, " B");
  r.observe("grad_bytes_per_param_autocast", "gradients under autocast, bytes per parameter", double(g_ac) / n_params, " B");
  r.observe("state_bytes_per_param_16bit", lp + " weights + grads + master + Adam, bytes per parameter",
            double(p16 + g16 + m32 + adam) / n_params, " B");
  r.observe("state_bytes_per_param_fp32", "fp32 weights + grads + Adam, bytes per parameter",
            double(p32 + g32 + adam) / n_params, " B");
  r.observe("output_error_ratio", "MLP output error vs fp64: autocast / fp32", err_ac / err32, "x",
            lab::num(err_ac / err32, 3) + "x (" + lab::sci(err_ac) + " vs " + lab::sci(err32) + ")");
  r.observe("autocast_total_ratio", "autocast step total / fp32 step total (computed)", double(t_ac) / t32, "x");
  // Autocast saves half the activations (which grow with the batch) and pays for the weight copies.
  const double breakeven = a32 > a_ac ? double(c_ac) / (double(a32 - a_ac) / batch) : 0;
  r.observe("autocast_breakeven_batch", "estimated batch above which autocast's total is smaller", breakeven, "",
            a32 > a_ac ? "about " + lab::num(breakeven, 3) + " (an estimate from these byte counts)" : "never");

  // ---- Part 2: throughput ----
  const lab::KeepTf32 keep_tf32;
  const bool bf16_ok = !ctx.cuda() || amp::cuda_supports_bf16();
  std::vector<torch::ScalarType> types = {torch::kBFloat16, torch::kHalf};
  if (!bf16_ok) types.erase(types.begin());
  const auto name = [&](torch::ScalarType t) { return lab::short_name(t) + (on ? "" : "*"); };
  // Each matmul row: inputs stored in `in`, multiplied in `compute`, the result stored in `in` again.
  // "via fp32" is what a 16-bit matmul costs when only the arithmetic is done in fp32.
  struct Mm { std::string label; torch::ScalarType in, compute; bool tf32 = false; };
  std::vector<Mm> mms = {{"fp32 mm", torch::kFloat, torch::kFloat}};
  for (auto t : types) {
    const auto s = on ? t : torch::kFloat;
    mms.push_back({name(t) + " mm (" + name(t) + " inputs and kernel)", s, s});
    mms.push_back({name(t) + " via fp32 (convert, fp32 mm, convert back)", s, torch::kFloat});
  }
  if (ctx.cuda()) mms.push_back({"tf32 mm (fp32 inputs, TF32 on)", torch::kFloat, torch::kFloat, on});
  std::vector<std::string> cols = {"matmul"};
  for (int64_t n : sizes) cols.push_back("n=" + std::to_string(n));
  cols.push_back("vs fp32");
  r.section("Throughput in " + rate + ": median of " + std::to_string(reps) + " timed runs after warm-up");
  auto& mm_table = r.table("n x n x n matmul; the inputs are made before the clock starts", cols);
  std::vector<double> last(mms.size());
  for (size_t w = 0; w < mms.size(); ++w) {
    std::vector<std::string> row = {mms[w].label};
    if (ctx.cuda()) at::globalContext().setAllowTF32CuBLAS(mms[w].tf32);
    for (int64_t n : sizes) {
      last[w] = lab::matmul_rate(ctx, n, mms[w].in, mms[w].compute, warmup, reps, unit);
      row.push_back(lab::num(last[w], 3));
    }
    row.push_back(lab::num(last[w] / last[0], 3) + "x");
    mm_table.row(row);
  }
  if (ctx.cuda()) {  // Tensor Cores want every matmul dimension to be a multiple of 8.
    at::globalContext().setAllowTF32CuBLAS(false);
    std::string text = "fp16 mm, multiple of 8 or not:";
    for (int64_t n : {kAlignedN, kUnalignedN})
      text += " n=" + std::to_string(n) + " " +
              lab::num(lab::matmul_rate(ctx, n, torch::kHalf, torch::kHalf, warmup, reps, unit), 3) + " " + rate;
    r.note(text);
  }
  const std::string at_n = "matmul n=" + std::to_string(sizes.back()) + ", ";
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string k = lab::short_name(types[i]), nm = name(types[i]);
    const double kernel = last[1 + 2 * i] / last[0], via = last[2 + 2 * i] / last[0];
    r.observe("matmul_" + k + "_vs_fp32", at_n + nm + " kernel", kernel, "x", lab::speed_words(kernel));
    r.observe("matmul_" + k + "_via_fp32_vs_fp32", at_n + nm + " via fp32", via, "x", lab::speed_words(via));
    if (types[i] == ctx.dtype || (!bf16_ok && types[i] == torch::kHalf))  // the type the quiz cites
      r.observe("matmul_16bit_vs_fp32", at_n + "--dtype " + nm, kernel, "x", lab::speed_words(kernel) + " through the " + nm +
                " kernel, against " + lab::num(via, 3) + "x converted to fp32 and back");
    r.takeaway(nm + " matmul: the " + nm + " kernel ran at " + lab::num(kernel, 3) + "x fp32, convert + fp32 mm + " +
               "convert back at " + lab::num(via, 3) + "x: " +
               (kernel > 1.05               ? "this device has fast native " + nm + " arithmetic"
                : kernel < kKernelBound * via ? "the time goes to the 16-bit kernel, not to the conversion"
                : kernel >= 0.95            ? "the 16-bit kernel is about as fast as fp32 here"
                                            : "slower than fp32, but no slower than converting to fp32 and back"));
  }

  // The MLP's training step: autocast on fp32 weights, a GradScaler for fp16.
  auto& step_table = r.table("MLP training step: forward, MSE, backward, SGD", {"mode", "ms/step", rate, "vs fp32"});
  const double step_flop = 2.0 * batch * width * width * (kLayers + kLayers + (kLayers - 1));  // fwd, dW, dX
  double ms32 = 0;
  std::vector<torch::ScalarType> modes = {torch::kFloat};
  modes.insert(modes.end(), types.begin(), types.end());
  for (const auto dtype : modes) {
    torch::manual_seed(ctx.seed);  // the same initial weights in every mode
    lab::Mlp net(width, kLayers);
    net->to(dev);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLearningRate));
    const bool cast = on && dtype != torch::kFloat, scaled = cast && dtype == torch::kHalf;
    amp::GradScaler scaler(dev, amp::GradScalerOptions{.enabled = scaled});
    const double ms = lab::median_ms(ctx, warmup, reps, [&] {
      opt.zero_grad();
      torch::Tensor loss;
      {
        amp::Autocast guard(dev, dtype, cast);
        loss = torch::mse_loss(net->forward(x), y);
      }
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
    });
    if (dtype == torch::kFloat) ms32 = ms;
    const std::string mode = dtype == torch::kFloat ? "fp32" : "autocast " + name(dtype) + (scaled ? " + GradScaler" : "");
    step_table.row({mode, lab::num(ms, 3), lab::num(lab::flop_rate(step_flop, ms, unit), 3), lab::num(ms32 / ms, 3) + "x"});
    if (dtype == torch::kFloat) continue;
    r.observe("mlp_" + lab::short_name(dtype) + "_vs_fp32", "MLP step, " + mode, ms32 / ms, "x", lab::speed_words(ms32 / ms));
    // The 16-bit type this run is about (--dtype; fp16 on a GPU without bf16), in words the quiz cites.
    if (dtype == ctx.dtype || (!bf16_ok && dtype == torch::kHalf))
      r.observe("mlp_16bit_vs_fp32", "MLP step, --dtype " + name(dtype), ms32 / ms, "x", lab::speed_words(ms32 / ms) + " with " + mode);
  }
  if (!bf16_ok)  // reported as not run, so no quiz text reads "the lab failed" on such a GPU
    for (const char* key : {"mlp_bf16_vs_fp32", "matmul_bf16_vs_fp32", "matmul_bf16_via_fp32_vs_fp32"})
      r.observe(key, "bf16", std::nan(""), "x", "not run (this GPU has no bf16)");
  r.observe("hardware_16bit", "device", ctx.cuda() ? hw.compute_capability : double(!lab::native_16bit_units(hw).empty()),
            "", where);
  if (!ctx.cuda()) r.note(lab::cpu_threads_note());
  r.takeaway("Gains depend on hardware and workload; no check asserts speed.");
  r.check(lp + " weights, gradients and activations each take exactly half the bytes of fp32",
          2 * p16 == p32 && 2 * g16 == g32 && 2 * a16 == a32 && 2 * a_ac == a32,
          "weights " + mb(p16) + " vs " + mb(p32) + ", grads " + mb(g16) + " vs " + mb(g32) + ", activations " +
              mb(a_ac) + " vs " + mb(a32) + " MB");
  r.check("the fp32 master copy adds 4 bytes per parameter, twice the " + lp + " weights, and Adam 8 more",
          m32 == 4 * n_params && m32 == 2 * p16 && adam == 8 * n_params,
          std::to_string(m32) + " B master, " + std::to_string(adam) + " B Adam state for " + std::to_string(n_params) +
              " parameters; " + lp + " weights " + std::to_string(p16) + " B");
  r.check("16-bit does not raise accuracy: the autocast MLP output is further from fp64 than fp32's",
          err_ac > err32, "max error " + lab::sci(err_ac) + " vs " + lab::sci(err32) + " (share of max |output|)");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
