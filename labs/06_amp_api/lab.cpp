// Lab 06: torch.amp in C++, one training step for fp32, bf16 and fp16 (Q6). The AMP code is in amp.cpp.
//
// The mixed-precision training step, written once: amp::Autocast (torch.amp.autocast) around the forward
// pass and the loss, then amp::GradScaler (torch.amp.GradScaler): scale(loss).backward(), unscale_ so the
// gradient clipping sees true gradients, step(opt), update(). The scaler is enabled for fp16 only, so for
// fp32 and bf16 every scaler call passes through. The lab trains one seeded MLP with that step in all
// three precisions, checkpoints model, optimizer and scaler halfway, resumes fresh objects from the file
// and compares them with the uninterrupted run bit for bit.
//
// Run:  build/bin/lab06_amp_api [--device cpu|cuda] [--quick] [--seed N] [--json]
//       (all three precisions run whatever --dtype says; on CUDA, bf16 where the GPU supports it)
// --flip: the resumed runs load model and optimizer but start with a fresh scaler. fp32 and bf16 (scaler
//         disabled, no state) still resume bit for bit, fp16 does not: check resume-bitwise fails.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp.h"
#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/measure.h"
#include "lab/registry.h"

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

// ---- measure: train each precision, uninterrupted and resumed from the halfway checkpoint ---------------

struct Precision {
  const char* name;
  torch::ScalarType dtype;  // kFloat: no autocast
};

struct RunResult {
  std::string name;
  bool autocast = false, scaler = false;
  double final_loss = 0;   // float64 evaluation on the whole training set
  int skipped = 0;         // steps the scaler skipped
  double final_scale = 1;  // the scaler's scale at the end (1: disabled)
  bool resumed_equal = false;
  double resumed_diff = 0;  // max |resumed - uninterrupted| over the parameters
};

struct Result {
  lab::Context ctx;
  int64_t steps = 0;
  double initial_loss = 0;
  std::vector<RunResult> runs;      // fp32 first
  std::vector<double> fp16_scales;  // the fp16 scale after each step
  std::vector<bool> fp16_stepped;   // whether fp16's optimizer stepped, per step
  double scale_at_checkpoint = 0;
  double fp32_same_skips = 0;  // fp32's final loss when it skips the very steps fp16's scaler skipped
  std::string second_unscale_error;
};

struct Data {
  torch::Tensor x, y;
  torch::Tensor batch_x(int64_t step) const { return x.narrow(0, (step * kBatch) % kSamples, kBatch); }
  torch::Tensor batch_y(int64_t step) const { return y.narrow(0, (step * kBatch) % kSamples, kBatch); }
};

torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(kIn, kHidden), torch::nn::ReLU(),
                               torch::nn::Linear(kHidden, kHidden), torch::nn::ReLU(),
                               torch::nn::Linear(kHidden, kClasses));
}

torch::nn::Sequential copy_of(const torch::nn::Sequential& m) {
  return torch::nn::Sequential(std::dynamic_pointer_cast<torch::nn::SequentialImpl>(m->clone()));
}

torch::optim::AdamW make_opt(torch::nn::Sequential& model) {
  return torch::optim::AdamW(model->parameters(), torch::optim::AdamWOptions(kLr).weight_decay(kWeightDecay));
}

double loss64(const torch::nn::Sequential& m, const Data& d) {
  torch::NoGradGuard no_grad;
  torch::nn::Sequential m64 = copy_of(m);
  m64->to(torch::kDouble);
  return F::cross_entropy(m64->forward(d.x.to(torch::kDouble)), d.y).item<double>();
}

// Steps [from, to); returns how many the scaler skipped. `m`, if given, receives the scale after each step
// and whether the optimizer stepped.
int train(torch::nn::Sequential& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler,
          torch::ScalarType dtype, const Data& d, int64_t from, int64_t to, Result* m = nullptr) {
  int skipped = 0;
  for (int64_t s = from; s < to; ++s) {
    const bool stepped = train_step(model, opt, scaler, dtype, d.batch_x(s), d.batch_y(s));
    skipped += !stepped;
    if (m) {
      m->fp16_scales.push_back(scaler.get_scale());
      m->fp16_stepped.push_back(stepped);
    }
  }
  return skipped;
}

// One precision: the uninterrupted run (checkpointed halfway, read-only), then a run of fresh objects
// resumed from that checkpoint. Flipped, the scaler's saved state goes into a scaler that is thrown away.
RunResult run_precision(const Precision& p, const torch::nn::Sequential& start, const Data& d, int64_t steps,
                        const std::string& ckpt, bool flip, Result& m) {
  const torch::Device dev = d.x.device();
  RunResult run{.name = p.name, .autocast = p.dtype != torch::kFloat, .scaler = p.dtype == torch::kHalf};
  torch::nn::Sequential a = copy_of(start);
  auto opt_a = make_opt(a);
  auto scaler_a = make_scaler(dev, p.dtype);
  Result* record = p.dtype == torch::kHalf ? &m : nullptr;
  run.skipped = train(a, opt_a, scaler_a, p.dtype, d, 0, steps / 2, record);
  save(ckpt, a, opt_a, scaler_a);
  if (p.dtype == torch::kHalf) m.scale_at_checkpoint = scaler_a.get_scale();
  run.skipped += train(a, opt_a, scaler_a, p.dtype, d, steps / 2, steps, record);
  run.final_loss = loss64(a, d);
  run.final_scale = scaler_a.get_scale();

  torch::nn::Sequential c = make_mlp();  // fresh random weights: only the checkpoint can make it equal
  c->to(dev);
  auto opt_c = make_opt(c);
  auto scaler_c = make_scaler(dev, p.dtype), discarded = make_scaler(dev, p.dtype);
  resume(ckpt, c, opt_c, flip ? discarded : scaler_c);
  std::filesystem::remove(ckpt);
  train(c, opt_c, scaler_c, p.dtype, d, steps / 2, steps);
  run.resumed_equal = lab::parameters_equal(*a, *c, &run.resumed_diff);
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
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, &before_);
  }
  ~FileSizeLimitAsError() { ::sigaction(SIGXFSZ, &before_, nullptr); }
  FileSizeLimitAsError(const FileSizeLimitAsError&) = delete;
  FileSizeLimitAsError& operator=(const FileSizeLimitAsError&) = delete;

 private:
  struct sigaction before_ {};
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx, .steps = ctx.size(200, 600, 80)};
  Data d;
  torch::nn::Sequential start = make_mlp(), teacher = make_mlp();
  {
    torch::NoGradGuard no_grad;
    start->to(ctx.device);
    teacher->to(ctx.device);
    d.x = torch::randn({kSamples, kIn}, torch::device(ctx.device));
    d.y = teacher->forward(d.x).argmax(/*dim=*/1);
  }
  m.initial_loss = loss64(start, d);
  const FileSizeLimitAsError file_size_limit;
  const lab::ScratchFile ckpt("amp_lab_06", ".pt");  // in a private folder, removed however the lab ends
  // fp16 first, so that an fp32 run can then skip the very steps fp16's scaler skipped: like for like.
  const RunResult fp16 = run_precision({"fp16", torch::kHalf}, start, d, m.steps, ckpt, ctx.flip, m);
  {
    torch::nn::Sequential f = copy_of(start);
    auto opt = make_opt(f);
    auto scaler = make_scaler(ctx.device, torch::kFloat);
    for (int64_t s = 0; s < m.steps; ++s)
      if (m.fp16_stepped[static_cast<size_t>(s)])
        train_step(f, opt, scaler, torch::kFloat, d.batch_x(s), d.batch_y(s));
    m.fp32_same_skips = loss64(f, d);
  }
  m.runs.push_back(run_precision({"fp32", torch::kFloat}, start, d, m.steps, ckpt, ctx.flip, m));
  if (!ctx.cuda() || amp::cuda_supports_bf16())
    m.runs.push_back(run_precision({"bf16", torch::kBFloat16}, start, d, m.steps, ckpt, ctx.flip, m));
  m.runs.push_back(fp16);
  m.second_unscale_error = second_unscale_error(start, d);
  return m;
}

// ---- report ------------------------------------------------------------------------------------------

double gap(double a, double b) {
  return std::abs(a / b - 1.0);
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
  auto& t = r.table("", {"run", "final loss", "vs fp32", "steps applied", "resumed == uninterrupted"});
  double worst = 0;
  int identical = 0;
  for (const RunResult& run : m.runs) {
    worst = std::max(worst, gap(run.final_loss, fp32.final_loss));
    identical += run.resumed_equal;
    t.row({run.name, lab::sci(run.final_loss), fmt::format("{:.4f}x", run.final_loss / fp32.final_loss),
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
  const auto [sampled, every] = lab::every_kth(m.fp16_scales, /*max_points=*/60);
  r.chart(
      lab::sparkline(fmt::format("fp16 loss scale over the uninterrupted run (every {} steps, log2)", every),
                     sampled, /*log2_scale=*/true));
}

// After the answer: the Python names beside the C++ ones (they are option b's), the scaler's state.
void report_api(const Result& m, lab::Report& r) {
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

void report_checks(const Result& m, lab::Report& r) {
  const RunResult& fp32 = m.runs.front();
  const RunResult& fp16 = m.runs.back();
  bool trained = true;
  int identical = 0;
  std::string per_run;
  for (const RunResult& run : m.runs) {
    trained = trained && run.final_loss < kTrained * m.initial_loss;
    identical += run.resumed_equal;
    per_run += fmt::format("{}{} {}", per_run.empty() ? "" : ", ", run.name,
                           run.resumed_equal ? "equal" : "differs");
  }
  const double bf16_gap = m.runs.size() == 3 ? gap(m.runs[1].final_loss, fp32.final_loss) : 0.0;
  const double fp16_like_for_like = gap(fp16.final_loss, m.fp32_same_skips);
  r.check("every-precision-trains",
          fmt::format("every precision trains: final loss below {}x the initial", kTrained),
          trained && m.runs.size() == (m.ctx.cuda() && !amp::cuda_supports_bf16() ? 2u : 3u),
          fmt::format("initial {}; final fp32 {}, fp16 {}", lab::sci(m.initial_loss),
                      lab::sci(fp32.final_loss), lab::sci(fp16.final_loss)));
  r.check("same-step-same-loss",
          fmt::format(
              "the same step gives the same loss in 16 bits: within {} of fp32 given the same applied steps",
              lab::percent(kSameTol, 0)),
          bf16_gap <= kSameTol && fp16_like_for_like <= kSameTol,
          fmt::format(
              "bf16 {} of fp32; fp16 {} of an fp32 run that skipped the same {} steps (of plain fp32: {})",
              lab::percent(bf16_gap, 2), lab::percent(fp16_like_for_like, 2), fp16.skipped,
              lab::percent(gap(fp16.final_loss, fp32.final_loss), 2)));
  r.check("resume-bitwise",
          "resuming from model, optimizer and scaler state reproduces the uninterrupted run bit for bit, in "
          "every precision",
          identical == static_cast<int>(m.runs.size()), per_run);
}

void report(const Result& m, lab::Report& r) {
  report_runs(m, r);
  report_api(m, r);
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
