// Lab 06: torch.amp in C++, one training step for fp32, bf16 and fp16 (Q6). The AMP code is in amp.cpp.
//
// The mixed-precision training step, written once: amp::Autocast (torch.amp.autocast) around the forward
// pass and the loss, then amp::GradScaler (torch.amp.GradScaler): scale(loss).backward(), unscale_ so the
// gradient clipping sees true gradients, step(opt), update(). The scaler is enabled for fp16 only, so for
// fp32 and bf16 every scaler call passes through. The lab trains one seeded MLP with that step in all
// three precisions, checkpoints model, optimizer and scaler halfway, resumes fresh objects from the file
// and compares them with the uninterrupted run bit for bit. Every loss is compared with the lab's own fp32
// step (lab_step, in judge.cpp), never with train_step in fp32. The MLP's last module records the dtype the
// logits came out in (what autocast did); the lab's own backward says which fp16 steps overflowed; and one
// step on a batch whose gradients are below fp16's range (the right class ahead by 14 nats) shows a scale is
// needed: on this MLP's ordinary batches fp16 without a scaler matches fp32 to 0.01%.
//
// Run:  build/bin/lab06_amp_api [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (all three precisions run, so the lab refuses --dtype; on CUDA, bf16 where the GPU supports it)
// --flip: the resumed runs load model and optimizer but start with a fresh scaler. fp32 and bf16 (scaler
//         disabled, no state) still resume bit for bit, fp16 does not: check resume-bitwise fails.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "judge.h"
#include "lab/charts.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/registry.h"
#include "lab/skip_record.h"

namespace {

using namespace lab06;  // kClipNorm and kGrowthInterval (amp.h), the step and the checkpoint (amp.cpp)
namespace F = torch::nn::functional;

constexpr int64_t kIn = 32, kHidden = 128, kClasses = 10;  // MLP widths; labels from a random teacher MLP
constexpr int64_t kSamples = 2048;                         // fixed training set, walked in order
constexpr int64_t kBatch = 64;                             // minibatch size
constexpr double kLr = 1e-3;                               // AdamW learning rate
constexpr double kWeightDecay = 0.01;                      // AdamW weight decay
constexpr double kTrained = 0.7;                           // "trained": final loss below 0.7x the initial one
constexpr double kSameTol = 0.01;                          // 16-bit within 1% of fp32, same steps applied
constexpr double kProbeMargin = 14;        // the tiny-gradient batch: the right class ahead by 14 nats
constexpr double kProbeOff = kLr / 4;      // a weight's step "off" fp32's: by more than a quarter of lr
constexpr double kProbeOffMax = 0.01;      // a correct step: at most 1% of the weights off
constexpr double kProbeUnscaledMin = 0.5;  // fp16 without a scale: at least half of them off
constexpr int64_t kWideEvery = 4;          // every 4th batch of the training set is drawn ...
constexpr double kWide = 2;                // ... 2x wider: its gradients are several times kClipNorm
constexpr double kNormTol = 1e-3;          // a clipped gradient's 2-norm: at most kClipNorm (1 + 1e-3)
constexpr double kBindsMin = 0.1, kBindsMax = 0.9;  // the lab's step clips on 10%-90% of its steps ...
constexpr double kBindsBy = 1.5;                    // ... by a factor of 1.5 or more at least once

// ---- measure: train each precision, uninterrupted and resumed from the halfway checkpoint ---------------

struct Precision {
  const char* name;
  torch::ScalarType dtype;  // kFloat: no autocast
};

const char* dtype_name(torch::ScalarType t) {
  return t == torch::kFloat ? "fp32" : t == torch::kHalf ? "fp16" : t == torch::kBFloat16 ? "bf16" : "other";
}

struct RunResult {
  std::string name;
  torch::ScalarType dtype = torch::kFloat;
  double final_loss = 0;   // float64 evaluation on the whole training set
  int skipped = 0;         // steps that left the weights as they were
  double final_scale = 1;  // the scaler's scale at the end (1: disabled)
  bool resumed_equal = false;
  double resumed_diff = 0;          // max |resumed - uninterrupted| over the parameters
  std::set<torch::ScalarType> ran;  // the dtypes the logits came out in, over the uninterrupted run
  double applied_norm_max = 0;      // the largest gradient 2-norm a step of the optimizer received (NaN kept)
  bool nonfinite_weights = false;   // the uninterrupted run ended with an inf or NaN weight
  double probe_off = 0;             // tiny-gradient batch: share of the weights stepped off fp32's step
};

// The fp16 run step by step: what train_step returned, what the lab's own backward at that step's scale
// found, and whether the weights moved (bitwise). Apart from one another, so that a step that steps the
// optimizer whatever it found, or reports what it did not do, shows.
struct StepRecord {
  std::vector<double> scale;  // the scaler's scale after each step
  std::vector<bool> stepped, overflowed, moved;
};

struct Result {
  lab::Context ctx;
  int64_t steps = 0;
  double initial_loss = 0;
  std::vector<RunResult> runs;  // fp32 first
  StepRecord fp16;              // the uninterrupted fp16 run
  double scale_at_checkpoint = 0;
  double reference_fp32 = 0;   // the lab's own fp32 step, every step
  double fp32_same_skips = 0;  // ... skipping the very steps whose fp16 gradients overflowed: like for like
  double probe_off_unscaled = 0;        // the lab's own fp16 step on the tiny-gradient batch, without a scale
  std::vector<double> reference_norms;  // the lab's fp32 run: each step's gradient 2-norm before its clip
  bool fp16_scaler_enabled = false;
  std::string second_unscale_error;
};

struct Data {
  torch::Tensor x, y;
  torch::Tensor batch_x(int64_t step) const { return x.narrow(0, (step * kBatch) % kSamples, kBatch); }
  torch::Tensor batch_y(int64_t step) const { return y.narrow(0, (step * kBatch) % kSamples, kBatch); }
};

// The MLP's last module: passes the logits through and records the dtype they come in, which is the dtype
// the Linears ran in (fp16 or bf16 under autocast, fp32 without). Autocast left out, or given another dtype
// than the step's, shows here, where a short run's losses hardly differ.
struct LogitsDtypeImpl : torch::nn::Cloneable<LogitsDtypeImpl> {
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& logits) {
    ran.insert(logits.scalar_type());
    return logits;
  }
  std::set<torch::ScalarType> ran;
};
TORCH_MODULE(LogitsDtype);

// The layers in named statements, so that the seed fixes the same weights under every compiler (the
// arguments of one call are evaluated in an unspecified order): last to first, the order g++ took.
torch::nn::Sequential make_mlp() {
  const torch::nn::Linear out(kHidden, kClasses);
  const torch::nn::Linear hidden(kHidden, kHidden);
  const torch::nn::Linear in(kIn, kHidden);
  return torch::nn::Sequential(in, torch::nn::ReLU(), hidden, torch::nn::ReLU(), out, LogitsDtype());
}
constexpr size_t kOutput = 4, kLogitsDtype = 5;  // the output Linear's and the recorder's index

torch::nn::Sequential copy_of(const torch::nn::Sequential& m) {
  return torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
}

// AdamW that records the 2-norm of the gradients each step() receives, whoever calls it (scaler.step or
// the learner's code): what reached the optimizer, clipped or not.
class NormRecordingAdamW : public torch::optim::AdamW {
 public:
  explicit NormRecordingAdamW(torch::nn::Sequential& model)
      : AdamW(model->parameters(), torch::optim::AdamWOptions(kLr).weight_decay(kWeightDecay)) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    double sum_sq = 0;
    for (const auto& group : param_groups())
      for (const auto& p : group.params())
        if (p.grad().defined()) sum_sq += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
    received_max_ = std::isnan(sum_sq) ? sum_sq : std::max(received_max_, std::sqrt(sum_sq));
    return AdamW::step(std::move(closure));
  }
  double received_max() const { return received_max_; }  // 0 before any step; NaN once a NaN came

 private:
  double received_max_ = 0;
};

NormRecordingAdamW make_opt(torch::nn::Sequential& model) {
  return NormRecordingAdamW(model);
}

double loss64(const torch::nn::Sequential& m, const Data& d) {
  torch::NoGradGuard no_grad;
  torch::nn::Sequential m64 = copy_of(m);
  m64->to(torch::kDouble);
  return F::cross_entropy(m64->forward(d.x.to(torch::kDouble)), d.y).item<double>();
}

std::vector<torch::Tensor> weights_of(const torch::nn::Sequential& m) {
  std::vector<torch::Tensor> w;
  for (const auto& p : m->parameters()) w.push_back(p.detach().clone());
  return w;
}

bool weights_moved(const std::vector<torch::Tensor>& before, const torch::nn::Sequential& m) {
  const auto after = m->parameters();
  for (size_t i = 0; i < before.size(); ++i)
    if (!torch::equal(before[i], after[i].detach())) return true;
  return false;
}

// ---- the lab's own step (judge.cpp's lab_step) and its runs ----

// The lab's fp32 run from `start`: every step, or all but those `skip` marks. `norms`, if given, receives
// each step's gradient 2-norm before the clip.
double reference_run(const torch::nn::Sequential& start, const Data& d, int64_t steps,
                     const std::vector<bool>* skip = nullptr, std::vector<double>* norms = nullptr) {
  torch::nn::Sequential f = copy_of(start);
  auto opt = make_opt(f);
  for (int64_t s = 0; s < steps; ++s) {
    if (skip && (*skip)[static_cast<size_t>(s)]) continue;
    const double norm = judge::lab_step(f, opt, torch::kFloat, 1.0, d.batch_x(s), d.batch_y(s));
    if (norms) norms->push_back(norm);
  }
  return loss64(f, d);
}

// ---- the tiny-gradient batch ----

// One batch that the model already gets right by kProbeMargin nats (its output bias raised by that much for
// class 0, every label class 0): the loss is ~1e-5 and most gradients ~1e-7 or less, below fp16's smallest
// subnormal (2^-24, 6e-8) unless the loss is scaled. Adam's first step hardly depends on the gradients'
// size, so fp32 moves nearly every weight by about lr: a step that lets them underflow leaves them still.
struct Probe {
  torch::nn::Sequential model;
  torch::Tensor x, y;
};

Probe make_probe(const torch::nn::Sequential& start, const Data& d) {
  Probe p{.model = copy_of(start), .x = d.batch_x(0), .y = torch::zeros_like(d.batch_y(0))};
  torch::NoGradGuard no_grad;
  p.model->ptr<torch::nn::LinearImpl>(kOutput)->bias[0] += kProbeMargin;
  return p;
}

// The change one step makes to the probe model's weights: `step` is handed a fresh copy and its optimizer.
template <typename Step>
std::vector<torch::Tensor> probe_update(const Probe& p, Step&& step) {
  torch::nn::Sequential m = copy_of(p.model);
  auto opt = make_opt(m);
  step(m, opt);
  std::vector<torch::Tensor> update;
  const auto before = p.model->parameters(), after = m->parameters();
  for (size_t i = 0; i < after.size(); ++i) update.push_back(after[i].detach() - before[i].detach());
  return update;
}

// The share of weights whose update is off the reference's by more than kProbeOff; NaN counts as off.
double off_share(const std::vector<torch::Tensor>& update, const std::vector<torch::Tensor>& reference) {
  int64_t off = 0, all = 0;
  for (size_t i = 0; i < update.size(); ++i) {
    off += torch::logical_not((update[i] - reference[i]).abs() <= kProbeOff).sum().item<int64_t>();
    all += update[i].numel();
  }
  return static_cast<double>(off) / static_cast<double>(all);
}

// Steps [from, to) with the learner's train_step; returns how many left the weights as they were. `record`,
// if given, receives each step's record (with the lab's own overflow verdict).
int train(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
          torch::ScalarType dtype, const Data& d, int64_t from, int64_t to, StepRecord* record = nullptr) {
  int skipped = 0;
  for (int64_t s = from; s < to; ++s) {
    const auto before = weights_of(model);
    const bool overflowed =
        record && judge::overflows(model, kLogitsDtype, scaler.get_scale(), d.batch_x(s), d.batch_y(s));
    const bool stepped = train_step(model, opt, scaler, dtype, d.batch_x(s), d.batch_y(s));
    const bool moved = weights_moved(before, model);
    skipped += !moved;
    if (record) {
      record->scale.push_back(scaler.get_scale());
      record->stepped.push_back(stepped);
      record->overflowed.push_back(overflowed);
      record->moved.push_back(moved);
    }
  }
  return skipped;
}

// One precision: the uninterrupted run (checkpointed halfway, read-only), then a run of fresh objects
// resumed from that checkpoint, then one step on the tiny-gradient batch. Flipped, the scaler's saved state
// goes into a scaler that is thrown away.
RunResult run_precision(const Precision& p, const torch::nn::Sequential& start, const Data& d, int64_t steps,
                        const std::string& ckpt, const Probe& probe,
                        const std::vector<torch::Tensor>& probe_ref, bool flip, Result& m) {
  const torch::Device dev = d.x.device();
  RunResult run{.name = p.name, .dtype = p.dtype};
  torch::nn::Sequential a = copy_of(start);
  auto opt_a = make_opt(a);
  auto scaler_a = make_scaler(dev, p.dtype);
  StepRecord* record = p.dtype == torch::kHalf ? &m.fp16 : nullptr;
  run.skipped = train(a, opt_a, scaler_a, p.dtype, d, 0, steps / 2, record);
  save(ckpt, a, opt_a, scaler_a);
  if (p.dtype == torch::kHalf) m.scale_at_checkpoint = scaler_a.get_scale();
  run.skipped += train(a, opt_a, scaler_a, p.dtype, d, steps / 2, steps, record);
  run.final_loss = loss64(a, d);
  run.final_scale = scaler_a.get_scale();
  run.ran = a->ptr<LogitsDtypeImpl>(kLogitsDtype)->ran;
  run.applied_norm_max = opt_a.received_max();
  for (const auto& p : a->parameters()) run.nonfinite_weights |= !torch::isfinite(p).all().item<bool>();

  torch::nn::Sequential c = make_mlp();  // fresh random weights: only the checkpoint can make it equal
  c->to(dev);
  auto opt_c = make_opt(c);
  auto scaler_c = make_scaler(dev, p.dtype), discarded = make_scaler(dev, p.dtype);
  resume(ckpt, c, opt_c, flip ? discarded : scaler_c);
  std::filesystem::remove(ckpt);
  train(c, opt_c, scaler_c, p.dtype, d, steps / 2, steps);
  run.resumed_equal = lab::parameters_equal(*a, *c, &run.resumed_diff);

  run.probe_off = off_share(probe_update(probe,
                                         [&](torch::nn::Sequential& model, torch::optim::Optimizer& opt) {
                                           auto scaler = make_scaler(dev, p.dtype);
                                           train_step(model, opt, scaler, p.dtype, probe.x, probe.y);
                                         }),
                            probe_ref);
  return run;
}

// What a second unscale_ before update() says (it would divide the gradients twice).
std::string second_unscale_error(const torch::nn::Sequential& start, const Data& d) {
  torch::nn::Sequential m = copy_of(start);
  auto opt = make_opt(m);
  amp::GradScaler scaler(d.x.device());  // enabled: a disabled scaler's unscale_ does nothing
  torch::Tensor loss;
  {
    amp::Autocast ac(d.x.device(), torch::kHalf);
    loss = F::cross_entropy(m->forward(d.batch_x(0)), d.batch_y(0));
  }
  scaler.scale(loss).backward();
  scaler.unscale_(opt);
  try {
    scaler.unscale_(opt);
  } catch (const amp::GradScalerError& e) {
    return e.what();
  }
  return "";
}

// SIGXFSZ ignored while the lab writes its checkpoint: a file-size limit (ulimit -f) then fails the write
// with EFBIG, which amp::save_checkpoint reports as one line ("File too large") and the scratch folder is
// removed as the error unwinds, where the signal's default action killed the lab and left the folder.
class FileSizeLimitAsError {
 public:
  FileSizeLimitAsError() {
    struct sigaction ignore{};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, &before_);
  }
  ~FileSizeLimitAsError() { ::sigaction(SIGXFSZ, &before_, nullptr); }
  FileSizeLimitAsError(const FileSizeLimitAsError&) = delete;
  FileSizeLimitAsError& operator=(const FileSizeLimitAsError&) = delete;

 private:
  struct sigaction before_{};
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .steps = ctx.size(120, 600, 80)};
  Data d;
  torch::nn::Sequential start = make_mlp(), teacher = make_mlp();
  {
    torch::NoGradGuard no_grad;
    start->to(ctx.device);
    teacher->to(ctx.device);
    d.x = torch::randn({kSamples, kIn}, torch::device(ctx.device));
    const torch::Tensor batch = torch::arange(kSamples, torch::device(ctx.device)).div(kBatch, "floor");
    d.x = torch::where((batch % kWideEvery == kWideEvery - 1).unsqueeze(1), d.x * kWide, d.x);
    d.y = teacher->forward(d.x).argmax(/*dim=*/1);
  }
  m.initial_loss = loss64(start, d);
  const Probe probe = make_probe(start, d);
  const auto probe_ref = probe_update(probe, [&](torch::nn::Sequential& model, torch::optim::Optimizer& opt) {
    judge::lab_step(model, opt, torch::kFloat, 1.0, probe.x, probe.y);
  });
  m.probe_off_unscaled =
      off_share(probe_update(probe,
                             [&](torch::nn::Sequential& model, torch::optim::Optimizer& opt) {
                               judge::lab_step(model, opt, torch::kHalf, 1.0, probe.x, probe.y);
                             }),
                probe_ref);
  m.fp16_scaler_enabled = make_scaler(ctx.device, torch::kHalf).is_enabled();
  const FileSizeLimitAsError file_size_limit;
  const lab::ScratchFile ckpt("amp_lab_06", ".pt");  // in a private folder, removed however the lab ends
  // fp16 first, so that the lab's fp32 run can then skip the very steps whose fp16 gradients overflowed.
  const RunResult fp16 =
      run_precision({"fp16", torch::kHalf}, start, d, m.steps, ckpt, probe, probe_ref, ctx.flip, m);
  m.reference_fp32 = reference_run(start, d, m.steps, nullptr, &m.reference_norms);
  m.fp32_same_skips = reference_run(start, d, m.steps, &m.fp16.overflowed);
  m.runs.push_back(
      run_precision({"fp32", torch::kFloat}, start, d, m.steps, ckpt, probe, probe_ref, ctx.flip, m));
  if (!ctx.cuda() || amp::cuda_supports_bf16())
    m.runs.push_back(
        run_precision({"bf16", torch::kBFloat16}, start, d, m.steps, ckpt, probe, probe_ref, ctx.flip, m));
  m.runs.push_back(fp16);
  m.second_unscale_error = second_unscale_error(start, d);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

double gap(double a, double b) {
  return std::abs(a / b - 1.0);
}

// std::max drops a NaN (max(x, NaN) is x): this keeps it, so a run whose loss is NaN is the worst.
double max_keeping_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
}

// The fp32 loss a run is compared with: the lab's own fp32 step, for fp16 skipping the steps it overflowed.
double reference_for(const Result& m, const RunResult& run) {
  return run.dtype == torch::kHalf ? m.fp32_same_skips : m.reference_fp32;
}

std::string ran_in(const RunResult& run) {
  std::string s;
  for (const auto t : run.ran) s += fmt::format("{}{}", s.empty() ? "" : "+", dtype_name(t));
  return s.empty() ? "(no forward)" : s;
}

// What the learner sees before answering: the runs, their losses and the fp16 scale.
void report_runs(const Result& m, lab::Report& r) {
  const RunResult& fp32 = m.runs.front();
  const RunResult& fp16 = m.runs.back();
  r.dtypes("bf16 and fp16", "fp32 weights, the Linears in bf16 or fp16, float64 evaluation");
  if (m.ctx.flip) r.note("FLIP: the resumed runs load model and optimizer, but start with a fresh scaler");
  r.section(fmt::format("{} AdamW steps of a {}-{}-{}-{} MLP, batch {}, clip {}, checkpoint after step {}",
                        m.steps, kIn, kHidden, kHidden, kClasses, kBatch, kClipNorm, m.steps / 2));
  r.note(
      fmt::format("fp16's loss scale starts at 2^16 and doubles after {} clean steps (PyTorch's default is "
                  "2000), so it keeps reaching overflow",
                  kGrowthInterval));
  auto& t = r.table(
      "", {"run", "Linears ran in", "final loss", "vs fp32", "steps applied", "resumed == uninterrupted"});
  double worst = 0;
  int identical = 0;
  for (const RunResult& run : m.runs) {
    if (run.dtype != torch::kFloat) worst = max_keeping_nan(worst, gap(run.final_loss, m.reference_fp32));
    identical += run.resumed_equal;
    t.row({run.name, ran_in(run), lab::sci(run.final_loss),
           fmt::format("{:.4f}x", run.final_loss / fp32.final_loss),
           fmt::format("{} of {}", m.steps - run.skipped, m.steps),
           run.resumed_equal ? "bitwise" : fmt::format("no, max diff {}", lab::sci(run.resumed_diff))});
  }
  r.observe("initial_loss", "initial loss (fp64)", m.initial_loss, "", lab::sci(m.initial_loss));
  r.observe("final_loss_fp32", "final loss fp32 (fp64 eval)", fp32.final_loss, "", lab::sci(fp32.final_loss));
  r.observe("loss_spread", "largest gap of a 16-bit run's final loss to fp32's", worst * 100, "%");
  r.observe("fp16_gap_same_skips", "fp16 against fp32 skipping the same steps",
            gap(fp16.final_loss, m.fp32_same_skips) * 100, "%");
  r.observe("skipped_steps_fp16", "fp16 steps skipped (inf/NaN gradients)", fp16.skipped);
  r.observe("resumed_identical", "runs whose resume was bitwise identical", identical, "",
            fmt::format("{} of {}", identical, m.runs.size()));
  r.observe("fp16_resumed_identical", "fp16 resume bitwise identical (1 = yes)", fp16.resumed_equal);
  const auto [sampled, every] = lab::every_kth(m.fp16.scale, /*max_points=*/60);
  r.chart(
      lab::sparkline(fmt::format("fp16 loss scale over the uninterrupted run (every {} steps, log2)", every),
                     sampled, /*log2_scale=*/true));
}

// What the clip did: the lab's own fp32 step's norms before clipping, and the largest norm any run's
// optimizer received.
struct ClipSummary {
  double binds = 0;    // share of the lab's steps whose norm was above kClipNorm
  double largest = 0;  // the largest norm over kClipNorm
  double applied = 0;  // the largest norm an optimizer step received in any run, over kClipNorm (NaN kept)
};

ClipSummary clip_summary(const Result& m) {
  ClipSummary c;
  for (const double n : m.reference_norms) {
    c.binds += n > kClipNorm;
    c.largest = max_keeping_nan(c.largest, n / kClipNorm);
  }
  c.binds /= std::max<double>(1, static_cast<double>(m.reference_norms.size()));
  for (const RunResult& run : m.runs)
    c.applied = max_keeping_nan(c.applied, run.applied_norm_max / kClipNorm);
  return c;
}

void report_clip(const Result& m, lab::Report& r) {
  const ClipSummary c = clip_summary(m);
  r.detail_section(fmt::format("The clip to norm {:g}: every {}th batch is drawn {:g}x wider", kClipNorm,
                               kWideEvery, kWide));
  r.observe("clip_binds", "the lab's fp32 step: steps whose gradient norm was above the clip", 100 * c.binds,
            "%", lab::percent(c.binds, 0));
  r.observe("clip_largest_factor", "the lab's fp32 step: the largest gradient norm over the clip", c.largest,
            "x", fmt::format("{:.2f}x", c.largest));
  r.observe("applied_norm_max", "train_step, any run: the largest gradient norm an optimizer step received",
            c.applied, "x", fmt::format("{:.4f}x the clip", c.applied));
  const RunResult& fp16 = m.runs.back();
  r.observe("applied_norm_max_fp16", "... in the fp16 run", fp16.applied_norm_max / kClipNorm, "x",
            fmt::format("{:.4g}x the clip", fp16.applied_norm_max / kClipNorm));
  r.observe("fp16_nonfinite_weights", "the fp16 run ended with inf/NaN weights (1 = yes)",
            fp16.nonfinite_weights);
  const double fp32_gap = gap(m.runs.front().final_loss, m.reference_fp32);
  r.observe("fp32_step_gap", "train_step in fp32 against the lab's own fp32 step: final loss gap",
            100 * fp32_gap, "%", lab::percent(fp32_gap, 2));
}

// After the answer: the Python names beside the C++ ones (they are option b's), the scaler's state.
void report_api(const Result& m, lab::Report& r) {
  r.detail_section(fmt::format("One step on a batch with tiny gradients (the right class ahead by {:g} nats)",
                               kProbeMargin));
  r.note(fmt::format("share of the weights whose step is off the lab's fp32 step by more than lr/4 ({})",
                     lab::sci(kProbeOff)));
  r.observe("probe_off_fp16_unscaled", "fp16, the lab's step without a loss scale",
            100 * m.probe_off_unscaled, "%");
  for (const RunResult& run : m.runs)
    r.observe(fmt::format("probe_off_{}", run.name), fmt::format("{}, train_step", run.name),
              100 * run.probe_off, "%");
  r.observe("fp16_scaler_enabled", "make_scaler(fp16) is enabled (1 = yes)", m.fp16_scaler_enabled);
  r.detail_section("The step in Python and in C++");
  r.table("", {"Python (torch.amp)", "C++ (amp-lab)"})
      .row({"torch.amp.autocast(\"cuda\", dtype=...)", "amp::Autocast ac(torch::kCUDA, dtype)"})
      .row({"torch.amp.GradScaler(\"cuda\", enabled=fp16)", "amp::GradScaler s(dev, {.enabled = fp16})"})
      .row({"scaler.scale(loss).backward()", "scaler.scale(loss).backward()"})
      .row({"scaler.unscale_(opt); clip_grad_norm_(...)", "scaler.unscale_(opt); clip_grad_norm_(...)"})
      .row({"scaler.step(opt); scaler.update()", "scaler.step(opt); scaler.update()"})
      .row({"torch.save({model, optimizer, scaler})", "amp::save_checkpoint(path, m, opt, s)"});
  r.observe("scale_at_checkpoint", "fp16 scale saved in the checkpoint", m.scale_at_checkpoint);
  r.observe("final_scale_fp16", "fp16 final scale", m.runs.back().final_scale);
  const bool refused = m.second_unscale_error.find("already been called") != std::string::npos;
  r.observe("second_unscale_refused", "a second unscale_ before update() raises, as Python's does (1 = yes)",
            refused);
  r.note("amp::GradScalerError: " + (m.second_unscale_error.empty() ? "(none)" : m.second_unscale_error));
  r.takeaway(
      "torch.cuda.amp.autocast(...) and torch.cuda.amp.GradScaler() are the old, CUDA-only names: they "
      "print a FutureWarning since PyTorch 2.4 and point to torch.amp.autocast(\"cuda\") and "
      "torch.amp.GradScaler(\"cuda\")");
}

// What the checks read, over every run.
struct RunsSummary {
  bool trained = true, dtypes_right = true, kept = true;
  int identical = 0;
  std::string per_run, ran, off, gaps, probe;
  // The same per run as the checks' named values: <run>_ran_fp32 (its Linears ran in fp32), <run>_off (its
  // loss off the lab's step), <run>_resumed_equal.
  nlohmann::json dtype_values = nlohmann::json::object(), off_values = nlohmann::json::object(),
                 resumed_values = nlohmann::json::object();
};

RunsSummary summarize(const Result& m) {
  RunsSummary s{.kept = m.probe_off_unscaled >= kProbeUnscaledMin};
  for (const RunResult& run : m.runs) {
    s.trained = s.trained && run.final_loss < kTrained * m.initial_loss;
    s.identical += run.resumed_equal;
    s.per_run += fmt::format("{}{} {}", s.per_run.empty() ? "" : ", ", run.name,
                             run.resumed_equal ? "equal" : "differs");
    s.resumed_values[run.name + "_resumed_equal"] = bool(run.resumed_equal);
    s.dtype_values[run.name + "_ran_fp32"] = run.ran == std::set<torch::ScalarType>{torch::kFloat};
    const bool right = run.ran == std::set<torch::ScalarType>{run.dtype};
    s.dtypes_right = s.dtypes_right && right;
    s.ran += fmt::format("{}{}: {}{}", s.ran.empty() ? "" : "; ", run.name, ran_in(run),
                         right ? "" : fmt::format(" (not {})", dtype_name(run.dtype)));
    const double g = gap(run.final_loss, reference_for(m, run));
    if (!(g <= kSameTol)) s.off += fmt::format("{}{}", s.off.empty() ? "" : ", ", run.name);  // NaN is off
    s.off_values[run.name + "_off"] = !(g <= kSameTol);
    s.gaps += fmt::format("{}{} {}", s.gaps.empty() ? "" : ", ", run.name, lab::percent(g, 2));
    s.kept = s.kept && run.probe_off <= kProbeOffMax;  // NaN fails
    s.probe += fmt::format("{}{} {}", s.probe.empty() ? "" : ", ", run.name, lab::percent(run.probe_off, 1));
  }
  return s;
}

// The checks of the training runs themselves: each trains, in its own precision, to the lab's fp32 loss,
// and fp16 skips exactly the steps that overflowed.
void report_training_checks(const Result& m, const RunsSummary& s, lab::Report& r) {
  const RunResult& fp32 = m.runs.front();
  const RunResult& fp16 = m.runs.back();
  const auto& [trained, dtypes_right, kept, identical, per_run, ran, off, gaps, probe, dtype_values,
               off_values, resumed_values] = s;
  r.check("every-precision-trains",
          fmt::format("every precision trains: final loss below {}x the initial", kTrained),
          trained && m.runs.size() == (m.ctx.cuda() && !amp::cuda_supports_bf16() ? 2u : 3u),
          fmt::format("initial {}; final fp32 {}, fp16 {}", lab::sci(m.initial_loss),
                      lab::sci(fp32.final_loss), lab::sci(fp16.final_loss)));
  // Read from the logits' dtype (LogitsDtype): fails on a step without autocast, or with a dtype of its own
  // (always fp16, the device's default bf16) where the run's is meant.
  r.check("autocast-dtype",
          "each run's Linears ran in its own precision: fp32 without autocast, bf16 and fp16 under autocast",
          dtypes_right, ran, dtype_values);
  // Against the lab's own fp32 step (fp16's skipping the steps whose gradients overflowed): fails on a
  // clip before unscale_ (fp16 only), or on a step wrong in every precision (zero_grad() left out).
  r.check(
      "same-step-same-loss",
      fmt::format("the same step gives the same loss in every precision: within {} of the lab's fp32 step, "
                  "given the same applied steps",
                  lab::percent(kSameTol, 0)),
      off.empty(),
      fmt::format("{}{} (fp16 against the lab's fp32 skipping the same {} steps; of plain fp32: {})",
                  off.empty() ? "" : "off: " + off + "; ", gaps, fp16.skipped,
                  lab::percent(gap(fp16.final_loss, m.reference_fp32), 2)),
      off_values);
  // The fp16 run's records against one another: fails on opt.step() called whatever the scaler found (the
  // weights move on an overflowing step) and on a return value that is not what the step did.
  // skips-exactly-overflows: the fp16 run's records agree step by step (src/lab/skip_record.h).
  const std::string mismatch = lab::skip_mismatch(m.fp16.stepped, m.fp16.overflowed, m.fp16.moved);
  const auto overflowed = std::count(m.fp16.overflowed.begin(), m.fp16.overflowed.end(), true);
  r.check("skips-exactly-overflows",
          "fp16's weights stood still on exactly the steps whose gradients overflowed, which train_step "
          "reported skipped",
          overflowed > 0 && mismatch.empty(),
          fmt::format("{} overflowed (the lab's own backward), {} left the weights still; {}", overflowed,
                      fp16.skipped, mismatch.empty() ? "the same steps" : mismatch),
          lab::skip_mismatch_values(m.fp16.stepped, m.fp16.overflowed, m.fp16.moved));
}

// The checks of what the step does besides training: keeps tiny gradients, clips before the optimizer,
// resumes bit for bit.
void report_step_checks(const Result& m, const RunsSummary& s, lab::Report& r) {
  const auto& [trained, dtypes_right, kept, identical, per_run, ran, off, gaps, probe, dtype_values,
               off_values, resumed_values] = s;
  // One step on gradients below fp16's range: fails on a scaler never enabled or never used (the loss not
  // scaled), and on bf16 computed in fp16; the lab's own unscaled fp16 step must lose them, or the batch
  // proves nothing.
  r.check(
      "tiny-gradients-kept",
      fmt::format("on a batch whose gradients are below fp16's range, every precision's step matches fp32's "
                  "(at most {} of the weights off), where fp16 without a scale loses them",
                  lab::percent(kProbeOffMax, 0)),
      kept,
      fmt::format("weights off fp32's step: {}; the lab's fp16 step without a scale: {} (need >= {})", probe,
                  lab::percent(m.probe_off_unscaled, 1), lab::percent(kProbeUnscaledMin, 0)));
  // Read from the optimizer (it records the norm of the gradients each step() receives): fails on a clip
  // after the step, or none, whose optimizer steps the wide batches' gradients unclipped, and on a step that
  // never reaches the optimizer (no norm received at all). The lab's own fp32
  // step must clip on some steps and not on others, by a clear factor, or the data prove nothing. Seeds 0-49
  // on a 2-core AMD EPYC (family 25 model 17): the lab's step clipped on 28-58% of its steps (quick 25-55%),
  // by up to 2.3-6.7x (quick 2.1-6.7x); a correct step's largest norm received 1.0000003x the clip.
  const ClipSummary c = clip_summary(m);
  r.check(
      "clip-before-step",
      fmt::format("every optimizer step received gradients clipped to norm {:g}, in every precision, where "
                  "the lab's own step clipped on {}-{} of its steps",
                  kClipNorm, lab::percent(kBindsMin, 0), lab::percent(kBindsMax, 0)),
      c.applied > 0 && c.applied <= 1 + kNormTol && c.binds >= kBindsMin && c.binds <= kBindsMax &&
          c.largest >= kBindsBy,
      fmt::format("largest norm an optimizer step received: {:.4f}x the clip (need <= {}); the lab's step "
                  "clipped on {} of its steps, by up to {:.2f}x (need {}-{}, {:g}x)",
                  c.applied, 1 + kNormTol, lab::percent(c.binds, 0), c.largest, lab::percent(kBindsMin, 0),
                  lab::percent(kBindsMax, 0), kBindsBy));
  r.check("resume-bitwise",
          "resuming from model, optimizer and scaler state reproduces the uninterrupted run bit for bit, in "
          "every precision",
          identical == static_cast<int>(m.runs.size()), per_run, resumed_values);
}

void report_checks(const Result& m, lab::Report& r) {
  const RunsSummary s = summarize(m);
  report_training_checks(m, s, r);
  report_step_checks(m, s, r);
}

void report(const Result& m, lab::Report& r) {
  report_runs(m, r);
  report_api(m, r);
  report_clip(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
