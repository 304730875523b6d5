// Lab 05: what 16-bit values do to a training step's memory and speed (quiz question 5). The AMP code
// is in amp.cpp.
//
// One small MLP (3 x Linear with ReLUs, MSE: the PyTorch AMP recipe's shape, scaled to the device) trains
// with Adam three ways: in fp32; with 16-bit weights and an fp32 master copy that Adam updates (the
// mixed-precision paper's recipe); and with autocast, whose fp32 weights are cast to 16-bit copies per
// step. Memory: the bytes of the run's real tensors (weights, master copy, gradients, Adam's state), and,
// measured by the allocator (on the CPU a counting wrapper, on CUDA the caching allocator's statistics),
// what each forward pass keeps for backward and the peak of one whole step, at the device's batch and at
// a small and a large batch of a narrower MLP. Speed: n x n x n matmuls in fp32, through the 16-bit kernel
// and "via fp32" (convert, fp32 matmul, convert back), then the training step in fp32, autocast bf16 and
// autocast fp16 + amp::GradScaler (warm-up, median of several runs). The report names the device, what
// /proc/cpuinfo lists for 16-bit arithmetic, and which kernel ATen picks for a 16-bit matmul there; speed is
// measured and reported, never asserted: it depends on that hardware.
//
// Run:  build/bin/lab05_memory_throughput [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--seed N]
//       [--json]
// That 16-bit tensors take half the bytes, and that autocast's output is further from fp64 than fp32's, hold
// by construction (2 bytes against 4; rounding to 8 or 11 significant bits against 24): the lab shows them
// as observations (activation_bytes_ratio, output_error_ratio) and checks only what the workload decides.
// --flip: the "16-bit" tensors are kept in fp32 (autocast disabled, the 16-bit model stored in fp32), so the
//         check autocast-kept-vs-batch fails; timings then compare fp32 with fp32.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "lab/hardware.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/registry.h"

namespace {

using namespace lab05;

constexpr int kLayers = 3;              // the recipe's 3 x Linear
constexpr double kLearningRate = 1e-3;  // Adam's and SGD's; bytes and timings do not depend on it
constexpr int64_t kMemWidth = 128;      // a narrower MLP, measured at two batches:
constexpr int64_t kSmallBatch = 16;     // one where its 16-bit weight copies outweigh the halved activations
constexpr int64_t kLargeBatch = 1024;   // and one where the halved activations outweigh the copies
constexpr double kMargin = 0.1;         // "exceeds" / "falls below" fp32's bytes: by at least 10%
constexpr int64_t kAlignedN = 4096;     // CUDA: an fp16 matmul size that is a multiple of 8 ...
constexpr int64_t kUnalignedN = 4097;   // ... and one that is not (Tensor Cores want multiples of 8)
constexpr double kKernelBound = 0.8;    // "the kernel is the slow part": 16-bit mm below 0.8x via-fp32

// The MLP of every run: kLayers Linear(width, width) with ReLUs between them.
torch::nn::Sequential make_mlp(int64_t width) {
  torch::nn::Sequential mlp;
  for (int i = 0; i < kLayers; ++i) {
    if (i > 0) mlp->push_back(torch::nn::ReLU());
    mlp->push_back(torch::nn::Linear(width, width));
  }
  return mlp;
}

// ---- measure, part 1: memory ---------------------------------------------------------------------------

// One mode's step in bytes: from its real tensors, and (measured) from the allocator.
struct Footprint {
  int64_t weights = 0, master = 0, copies = 0, grads = 0, adam = 0;
  int64_t kept = 0;  // measured: what the forward pass left allocated for backward
  int64_t peak = 0;  // measured: the most the allocator held above its start during one whole step
};

int64_t adam_bytes(const torch::optim::Optimizer& opt) {
  int64_t n = 0;
  for (const auto& [key, state] : opt.state()) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*state);
    n += lab::tensor_bytes({s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()});
  }
  return n;
}

// Autocast's bytes over fp32's: what the forward pass keeps for backward, and the step's peak.
struct Ratios {
  double kept = 0, peak = 0;
};

struct Memory {
  int64_t params = 0;  // parameters of the device's MLP
  Footprint fp32, pure16, autocast;
  Ratios small, large;  // the narrower MLP at kSmallBatch and kLargeBatch
};

// fp32 or autocast (`dtype` kFloat: off): a warm-up step makes Adam's state; then the forward pass alone,
// and one whole step, each measured from gradients set to none.
Footprint step_footprint(torch::nn::Sequential model, torch::ScalarType dtype, const torch::Tensor& x,
                         const torch::Tensor& y) {
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(kLearningRate));
  amp::GradScaler scaler(x.device(), {.enabled = dtype == torch::kHalf});
  train_step(model, opt, scaler, dtype, x, y);
  opt.zero_grad();
  Footprint f;
  torch::Tensor out;  // alive until measured: its graph holds what backward needs
  f.kept = lab::allocated_bytes(x.device(), [&] {
             amp::Autocast autocast(x.device(), dtype, /*enabled=*/dtype != torch::kFloat);
             out = model->forward(x);
           }).retained;
  out = torch::Tensor();
  f.peak = lab::allocated_bytes(x.device(), [&] { train_step(model, opt, scaler, dtype, x, y); }).peak;
  const auto params = model->parameters();
  f.weights = lab::tensor_bytes(params);
  f.grads = lab::tensor_bytes(lab::grads(params));
  f.adam = adam_bytes(opt);
  if (dtype != torch::kFloat)
    for (const auto& p : params) f.copies += p.numel() * static_cast<int64_t>(c10::elementSize(dtype));
  return f;
}

Footprint master_footprint(torch::nn::Sequential model16, const torch::Tensor& x16, const torch::Tensor& y) {
  std::vector<torch::Tensor> master = master_copy(model16);
  torch::optim::Adam opt(master, torch::optim::AdamOptions(kLearningRate));
  master_step(model16, master, opt, x16, y);
  model16->zero_grad();
  Footprint f;
  torch::Tensor out;  // alive until measured: its graph holds what backward needs
  f.kept = lab::allocated_bytes(x16.device(), [&] { out = model16->forward(x16); }).retained;
  out = torch::Tensor();
  f.peak = lab::allocated_bytes(x16.device(), [&] { master_step(model16, master, opt, x16, y); }).peak;
  f.weights = lab::tensor_bytes(model16->parameters());
  f.grads = lab::tensor_bytes(lab::grads(model16->parameters()));
  f.master = lab::tensor_bytes(master);
  f.adam = adam_bytes(opt);
  return f;
}

torch::nn::Sequential copy_of(const torch::nn::Sequential& m) {
  return torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
}

// The narrower MLP at `batch`, autocast against fp32.
Ratios autocast_over_fp32(const lab::Context& ctx, torch::ScalarType low, int64_t batch) {
  torch::nn::Sequential model = make_mlp(kMemWidth);
  model->to(ctx.device);
  const auto f32 = torch::TensorOptions().device(ctx.device);
  const torch::Tensor x = torch::randn({batch, kMemWidth}, f32), y = torch::randn({batch, kMemWidth}, f32);
  const Footprint a = step_footprint(copy_of(model), low, x, y),
                  b = step_footprint(model, torch::kFloat, x, y);
  return {double(a.kept) / double(b.kept), double(a.peak) / double(b.peak)};
}

Memory measure_memory(const lab::Context& ctx, torch::ScalarType low, const torch::nn::Sequential& start,
                      const torch::Tensor& x, const torch::Tensor& y) {
  Memory m;
  m.params = lab::tensor_bytes(start->parameters()) / 4;
  m.fp32 = step_footprint(copy_of(start), torch::kFloat, x, y);
  m.autocast = step_footprint(copy_of(start), low, x, y);
  torch::nn::Sequential model16 = copy_of(start);
  model16->to(low);
  m.pure16 = master_footprint(model16, x.to(low), y);
  m.small = autocast_over_fp32(ctx, low, kSmallBatch);
  m.large = autocast_over_fp32(ctx, low, kLargeBatch);
  return m;
}

// ---- measure, part 2: speed ------------------------------------------------------------------------------

struct MatmulRow {
  std::string label;
  torch::ScalarType in, compute;  // stored in `in`, multiplied in `compute` (converted there and back)
  bool tf32 = false;
  std::vector<double> rates;  // per size, in the report's unit of FLOP/s
};

struct StepRow {
  std::string mode;
  torch::ScalarType dtype;
  double ms = 0;
};

struct Result {
  lab::Context ctx;
  torch::ScalarType low = torch::kBFloat16;  // what the "16-bit" tensors are stored in (fp32 under --flip)
  int64_t width = 0, batch = 0;
  Memory memory;
  double err32 = 0, err_ac = 0;          // MLP output, max error against float64
  std::vector<torch::ScalarType> types;  // the 16-bit types timed (bf16 only where the device has it)
  std::vector<int64_t> sizes;
  std::vector<MatmulRow> matmuls;  // fp32 first, then per type: its kernel, then via fp32; CUDA: tf32
  std::vector<StepRow> steps;      // fp32 first
  std::string alignment_note;      // CUDA: fp16 at a multiple of 8 and not
  lab::Hardware hw;
};

std::string marked(const Result& m, torch::ScalarType t) {
  return lab::short_name(t) + (m.ctx.flip ? "*" : "");
}

void measure_matmuls(Result& m, int warmup, int reps, double unit) {
  m.matmuls.push_back({"fp32 mm", torch::kFloat, torch::kFloat});
  for (auto t : m.types) {
    const auto s = m.ctx.flip ? torch::kFloat : t;
    m.matmuls.push_back({marked(m, t) + " mm (" + marked(m, t) + " kernel)", s, s});
    m.matmuls.push_back({marked(m, t) + " via fp32 (convert, mm, back)", s, torch::kFloat});
  }
  if (m.ctx.cuda())
    m.matmuls.push_back({"tf32 mm (fp32 inputs, TF32 on)", torch::kFloat, torch::kFloat, !m.ctx.flip});
  const lab::KeepTf32 keep_tf32;
  for (MatmulRow& row : m.matmuls) {
    if (m.ctx.cuda()) at::globalContext().setAllowTF32CuBLAS(row.tf32);
    for (int64_t n : m.sizes)
      row.rates.push_back(lab::matmul_rate(m.ctx, n, row.in, row.compute, warmup, reps, unit));
  }
  if (!m.ctx.cuda()) return;
  at::globalContext().setAllowTF32CuBLAS(false);
  m.alignment_note = "fp16 mm, multiple of 8 or not:";
  for (int64_t n : {kAlignedN, kUnalignedN})
    m.alignment_note +=
        fmt::format(" n={} {} TFLOP/s", n,
                    lab::num(lab::matmul_rate(m.ctx, n, torch::kHalf, torch::kHalf, warmup, reps, unit), 3));
}

// The training step of each mode, timed: SGD, so that the optimizer is cheap next to the matmuls.
void measure_steps(Result& m, const torch::Tensor& x, const torch::Tensor& y, int warmup, int reps) {
  std::vector<torch::ScalarType> modes = {torch::kFloat};
  modes.insert(modes.end(), m.types.begin(), m.types.end());
  for (const auto dtype : modes) {
    torch::manual_seed(m.ctx.seed);  // the same initial weights in every mode
    torch::nn::Sequential net = make_mlp(m.width);
    net->to(m.ctx.device);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLearningRate));
    const torch::ScalarType run = m.ctx.flip ? torch::kFloat : dtype;  // --flip: autocast off
    amp::GradScaler scaler(m.ctx.device, {.enabled = run == torch::kHalf});
    const double ms = lab::median_ms(m.ctx, warmup, reps, [&] { train_step(net, opt, scaler, run, x, y); });
    const std::string mode = dtype == torch::kFloat ? "fp32"
                                                    : "autocast " + marked(m, dtype) +
                                                          (run == torch::kHalf ? " + GradScaler" : "");
    m.steps.push_back({mode, dtype, ms});
  }
}

torch::Tensor forward_fp64(const torch::nn::Sequential& model, const torch::Tensor& x) {
  torch::nn::Sequential m64 = copy_of(model);
  m64->to(torch::kDouble);
  return m64->forward(x.to(torch::kDouble));
}

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .low = ctx.flip ? torch::kFloat : ctx.dtype, .hw = lab::hardware_of(ctx.device)};
  m.width = ctx.size(512, 4096, 128);
  m.batch = ctx.size(64, 512, 32);
  m.sizes = ctx.quick    ? std::vector<int64_t>{64, 128}
            : ctx.cuda() ? std::vector<int64_t>{1024, 4096, 8192}
                         : std::vector<int64_t>{128, 256};
  m.types = {torch::kBFloat16, torch::kHalf};
  if (ctx.cuda() && !amp::cuda_supports_bf16()) m.types.erase(m.types.begin());
  torch::nn::Sequential start = make_mlp(m.width);
  start->to(ctx.device);
  const auto f32 = torch::TensorOptions().device(ctx.device);
  const torch::Tensor x = torch::randn({m.batch, m.width}, f32), y = torch::randn({m.batch, m.width}, f32);
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor ref = forward_fp64(start, x);
    m.err32 = lab::max_rel_error(start->forward(x), ref);
    amp::Autocast autocast(ctx.device, ctx.dtype, /*enabled=*/!ctx.flip);
    m.err_ac = lab::max_rel_error(start->forward(x), ref);
  }
  m.memory = measure_memory(ctx, m.low, start, x, y);
  const int warmup = ctx.cuda() ? 3 : 1, reps = ctx.size(3, 10, 3);
  measure_matmuls(m, warmup, reps, ctx.cuda() ? 1e12 : 1e9);
  measure_steps(m, x, y, warmup, reps);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

std::string bytes_per_param(double b) {
  return lab::num(b, 3) + " B";
}
std::string ratio(double x) {
  return fmt::format("{:.2f}x", x);
}

void report_memory(const Result& m, lab::Report& r) {
  const Memory& mem = m.memory;
  const Footprint &f32 = mem.fp32, &p16 = mem.pure16, &ac = mem.autocast;
  const std::string lp = marked(m, m.ctx.dtype);
  const auto mb = lab::mb_cell;
  r.section(fmt::format("Memory of one Adam training step, MB (3 x Linear({}), batch {})", m.width, m.batch));
  r.table("", {"tensors", "fp32", lp + " + fp32 master", "autocast " + lp})
      .row({"weights", mb(f32.weights), mb(p16.weights), mb(ac.weights)})
      .row({"fp32 master copy", "-", mb(p16.master), "-"})
      .row({lp + " weight copies (numel x 2)", "-", "-", mb(ac.copies)})
      .row({"gradients", mb(f32.grads), mb(p16.grads), mb(ac.grads)})
      .row({"Adam state", mb(f32.adam), mb(p16.adam), mb(ac.adam)})
      .row({"kept for backward (allocator)", mb(f32.kept), mb(p16.kept), mb(ac.kept)})
      .row({"peak of one step (allocator)", mb(f32.peak), mb(p16.peak), mb(ac.peak)});
  r.note(fmt::format("autocast/fp32, Linear({}), batch {}|{}: kept {}|{}, peak {}|{}", kMemWidth, kSmallBatch,
                     kLargeBatch, ratio(mem.small.kept), ratio(mem.large.kept), ratio(mem.small.peak),
                     ratio(mem.large.peak)));
}

void report_memory_details(const Result& m, lab::Report& r) {
  const Memory& mem = m.memory;
  const Footprint &f32 = mem.fp32, &p16 = mem.pure16, &ac = mem.autocast;
  const double n = static_cast<double>(mem.params);
  const std::string lp = marked(m, m.ctx.dtype);
  r.detail_section("Memory, per parameter and as ratios");
  r.observe("weight_bytes_ratio", lp + " weights / fp32 weights", double(p16.weights) / f32.weights, "x");
  r.observe("activation_bytes_ratio", "kept for backward, " + lp + " / fp32 forward (measured)",
            double(p16.kept) / f32.kept, "x");
  r.observe("master_bytes_per_param", "fp32 master copy, bytes per parameter", p16.master / n, " B",
            bytes_per_param(p16.master / n));
  r.observe("adam_bytes_per_param", "Adam state, bytes per parameter", p16.adam / n, " B",
            bytes_per_param(p16.adam / n));
  r.observe("grad_bytes_per_param_autocast", "gradients under autocast, bytes per parameter", ac.grads / n,
            " B", bytes_per_param(ac.grads / n));
  const double state16 = (p16.weights + p16.grads + p16.master + p16.adam) / n;
  const double state32 = (f32.weights + f32.grads + f32.adam) / n;
  r.observe("state_bytes_per_param_16bit", lp + " weights + grads + master + Adam, per parameter", state16,
            " B", bytes_per_param(state16));
  r.observe("state_bytes_per_param_fp32", "fp32 weights + grads + Adam, per parameter", state32, " B",
            bytes_per_param(state32));
  for (const auto& [key, what, small, large] :
       {std::tuple{"autocast_kept_by_batch", "kept for backward", mem.small.kept, mem.large.kept},
        std::tuple{"autocast_peak_by_batch", "step peak", mem.small.peak, mem.large.peak}})
    r.observe(
        key, fmt::format("autocast / fp32, {}, 3 x Linear({})", what, kMemWidth), small, "x",
        fmt::format("{} at batch {}, {} at batch {}", ratio(small), kSmallBatch, ratio(large), kLargeBatch));
  const double peak_ratio = double(ac.peak) / f32.peak;
  r.observe("autocast_peak_ratio", fmt::format("autocast step peak / fp32's at batch {} (measured)", m.batch),
            peak_ratio, "x", ratio(peak_ratio));
  // The master recipe's step holds fp32 copies of the 16-bit gradients for Adam (master_step), on top of
  // the 16-bit ones: its peak can pass fp32's although its weights are half the bytes.
  const double master_peak = double(p16.peak) / f32.peak;
  r.observe("master_peak_ratio",
            fmt::format("16-bit weights + fp32 master: step peak / fp32's at batch {} (measured)", m.batch),
            master_peak, "x", ratio(master_peak));
  r.observe(
      "output_error_ratio", "MLP output error vs fp64: autocast / fp32", m.err_ac / m.err32, "x",
      fmt::format("{}x ({} vs {})", lab::num(m.err_ac / m.err32, 3), lab::sci(m.err_ac), lab::sci(m.err32)));
}

std::vector<std::string> matmul_cells(const Result& m, const MatmulRow& row) {
  std::vector<std::string> cells = {row.label};
  for (double v : row.rates) cells.push_back(lab::num(v, 3));
  cells.push_back(lab::num(row.rates.back() / m.matmuls[0].rates.back(), 3) + "x");
  return cells;
}

// The throughput tables (essential) and the speed words the quiz cites (after the answer).
void report_speed(const Result& m, lab::Report& r) {
  const std::string rate = m.ctx.cuda() ? "TFLOP/s" : "GFLOP/s";
  const int reps = m.ctx.size(3, 10, 3);
  r.section(fmt::format("Throughput in {}, median of {} timed runs after warm-up", rate, reps));
  std::vector<std::string> cols = {"n x n x n matmul"};
  for (int64_t n : m.sizes) cols.push_back("n=" + std::to_string(n));
  cols.push_back("vs fp32");
  auto& mm = r.table("", cols);
  for (const MatmulRow& row : m.matmuls)
    if (row.in == row.compute) mm.row(matmul_cells(m, row));
  const double unit = m.ctx.cuda() ? 1e12 : 1e9;
  const double step_flop =
      2.0 * m.batch * m.width * m.width * (kLayers + kLayers + (kLayers - 1));  // fwd, dW, dX
  auto& steps = r.table(fmt::format("training step (batch {}): forward, MSE, backward, SGD", m.batch),
                        {"mode", "ms/step", rate, "vs fp32"});
  for (const StepRow& s : m.steps)
    steps.row({s.mode, lab::num(s.ms, 3), lab::num(lab::flop_rate(step_flop, s.ms, unit), 3),
               lab::num(m.steps[0].ms / s.ms, 3) + "x"});
}

bool quiz_type(const Result& m, torch::ScalarType t) {
  // The 16-bit type the quiz cites: --dtype, or fp16 on a GPU without bf16.
  return t == m.ctx.dtype || (m.types.size() == 1 && t == torch::kHalf);
}

void report_speed_details(const Result& m, lab::Report& r) {
  r.detail_section("Speed: the 16-bit matmul converted to fp32 and back, in words, and what ran");
  std::vector<std::string> cols = {"n x n x n matmul"};
  for (int64_t n : m.sizes) cols.push_back("n=" + std::to_string(n));
  cols.push_back("vs fp32");
  auto& via_table = r.table("", cols);
  for (const MatmulRow& row : m.matmuls)
    if (row.in != row.compute) via_table.row(matmul_cells(m, row));
  const std::string at_n = fmt::format("matmul n={}, ", m.sizes.back());
  const double fp32_rate = m.matmuls[0].rates.back();
  for (size_t i = 0; i < m.types.size(); ++i) {
    const torch::ScalarType t = m.types[i];
    const std::string k = lab::short_name(t), nm = marked(m, t);
    const double kernel = m.matmuls[1 + 2 * i].rates.back() / fp32_rate;
    const double via = m.matmuls[2 + 2 * i].rates.back() / fp32_rate;
    r.observe("matmul_" + k + "_vs_fp32", at_n + nm + " kernel", kernel, "x", lab::speed_words(kernel));
    r.observe("matmul_" + k + "_via_fp32_vs_fp32", at_n + nm + " via fp32", via, "x", lab::speed_words(via));
    if (quiz_type(m, t))
      r.observe("matmul_16bit_vs_fp32", at_n + "--dtype " + nm, kernel, "x",
                lab::speed_words(kernel) + " through the " + nm + " kernel, against " + lab::num(via, 3) +
                    "x converted to fp32 and back");
    r.note(nm + " at::matmul here: " + lab::matmul_kernel(m.ctx.device, t).text);
    r.takeaway(nm + " matmul: the " + nm + " kernel ran at " + lab::num(kernel, 3) +
               "x fp32, convert + fp32 mm + " + "convert back at " + lab::num(via, 3) + "x: " +
               (kernel > 1.05                 ? "this device has fast " + nm + " arithmetic"
                : kernel < kKernelBound * via ? "the time goes to the 16-bit kernel, not to the conversion"
                : kernel >= 0.95              ? "the 16-bit kernel is about as fast as fp32 here"
                                 : "slower than fp32, but no slower than converting to fp32 and back"));
  }
  for (const StepRow& s : m.steps) {
    if (s.dtype == torch::kFloat) continue;
    const double ratio = m.steps[0].ms / s.ms;
    r.observe("mlp_" + lab::short_name(s.dtype) + "_vs_fp32", "training step, " + s.mode, ratio, "x",
              lab::speed_words(ratio));
    if (quiz_type(m, s.dtype))
      r.observe("mlp_16bit_vs_fp32", "training step, --dtype " + marked(m, s.dtype), ratio, "x",
                lab::speed_words(ratio) + " with " + s.mode);
  }
  if (m.types.size() == 1)  // reported as not run, so that no quiz text reads "the lab failed" on such a GPU
    for (const char* key : {"mlp_bf16_vs_fp32", "matmul_bf16_vs_fp32", "matmul_bf16_via_fp32_vs_fp32"})
      r.observe(key, "bf16", std::nan(""), "x", "not run (this GPU has no bf16)");
  const std::string where = lab::describe_16bit_hardware(m.hw);
  r.observe("hardware_16bit", "device",
            m.ctx.cuda() ? m.hw.compute_capability : double(!lab::native_16bit_units(m.hw).empty()), "",
            where);
  if (!m.alignment_note.empty()) r.note(m.alignment_note);
  if (!m.ctx.cuda()) r.note(lab::cpu_threads_note());
}

// "device: AMD EPYC; cpuinfo: avx512_bf16, no amx_bf16/avx512_fp16/amx_fp16", for the first screen.
std::string device_line(const lab::Hardware& hw) {
  if (hw.cuda || hw.cpu_flags.empty()) return "device: " + lab::describe_16bit_hardware(hw);
  std::string has, lacks;
  for (const auto& f : lab::native_16bit_flags()) (hw.cpu_flags.count(f) ? has : lacks) += "/" + f;
  return "device: " + hw.name + "; cpuinfo: " + (has.empty() ? "" : has.substr(1)) +
         (has.empty() || lacks.empty() ? "" : ", ") + (lacks.empty() ? "" : "no " + lacks.substr(1));
}

void report(const Result& m, lab::Report& r) {
  const std::string lp = marked(m, m.ctx.dtype);
  r.dtypes("bf16 and fp16", "fp32 against " + lp + " (--dtype), fp32 master copy; bf16 and fp16 timed");
  if (m.ctx.flip) r.note("FLIP: the " + lp + " tensors are stored in fp32 and autocast is disabled");
  r.note(device_line(m.hw));
  report_memory(m, r);
  report_speed(m, r);
  report_memory_details(m, r);
  report_speed_details(m, r);
  r.takeaway("Gains depend on hardware and workload; no check asserts speed.");

  const Memory& mem = m.memory;
  // Fails if autocast kept no 16-bit weight copies or kept fp32 activations (a region that does not cast,
  // as --flip's), or if the allocator's count missed either.
  r.check("autocast-kept-vs-batch",
          fmt::format("what autocast's forward keeps for backward exceeds fp32's at batch {} (its {} weight "
                      "copies) and falls below it at batch {} (halved activations)",
                      kSmallBatch, lp, kLargeBatch),
          mem.small.kept >= 1 + kMargin && mem.large.kept <= 1 - kMargin,
          fmt::format("3 x Linear({}): {}x fp32's at batch {}, {}x at batch {} (need >= {} and <= {})",
                      kMemWidth, lab::num(mem.small.kept, 3), kSmallBatch, lab::num(mem.large.kept, 3),
                      kLargeBatch, lab::num(1 + kMargin), lab::num(1 - kMargin)));
}

}  // namespace

AMP_LAB(measure, report);
