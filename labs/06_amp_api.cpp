// Lab 06: the current AMP API, torch.amp.autocast + torch.amp.GradScaler, in C++ (quiz question 6).
//
// The canonical mixed-precision training step, written once (nanoGPT style) for fp32, bf16 and fp16:
// amp::Autocast around forward and loss, scaler.scale(loss).backward(), unscale_ and clipping,
// scaler.step(opt), scaler.update(); GradScalerOptions{.enabled = dtype == fp16}, so for fp32 and bf16
// every scaler call is a pass-through. The lab prints the Python <-> C++ mapping (and the deprecated
// torch.cuda.amp names), trains one seeded MLP in all three precisions, charts the fp16 scale step by
// step, checkpoints model + optimizer + scaler mid-run, resumes into fresh objects and compares with the
// uninterrupted run bit for bit, and shows that a second unscale_ before update() is refused.
//
// Run alone:  build/bin/lab06_amp_api [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--flip]
// (all three precisions run whatever --dtype says; on CUDA bf16 needs a GPU that supports it)
// --flip: the resumed run loads model and optimizer from the checkpoint but drops the scaler's state
//         (a fresh GradScaler): fp32 and bf16, whose scaler is disabled, still resume bit for bit, fp16
//         does not, so the "resumes bit for bit in every precision" check fails.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "amp/autocast.h"
#include "amp/checkpoint.h"
#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "lab/charts.h"
#include "lab/measure.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

namespace F = torch::nn::functional;

constexpr int64_t kIn = 32;              // input features
constexpr int64_t kHidden = 128;         // two hidden layers of this width
constexpr int64_t kClasses = 10;         // a teacher network's argmax labels
constexpr int64_t kSamples = 2048;       // fixed training set, walked in order
constexpr int64_t kBatch = 64;           // minibatch size
constexpr double kLr = 1e-3;             // AdamW learning rate
constexpr double kWeightDecay = 0.01;    // AdamW weight decay
constexpr double kClipNorm = 1.0;        // clip_grad_norm_ on unscaled grads
constexpr int64_t kGrowthInterval = 10;  // fp16 scaler: grow after 10 clean steps, so its state changes
constexpr double kAgreeTol = 0.04;       // bf16/fp16 final loss within 4% of fp32's (measured: fp16
                                         // 2.5% off, having skipped 12 of 200 steps; bf16 0.01%)
constexpr double kTrained = 0.7;         // "trained": final loss below 0.7x the initial one
constexpr size_t kChartWidth = 60;       // the scale chart's width in steps

struct NetImpl : torch::nn::Cloneable<NetImpl> {  // Cloneable: copies for each run start identical
  NetImpl() { reset(); }
  void reset() override {
    fc1 = register_module("fc1", torch::nn::Linear(kIn, kHidden));
    fc2 = register_module("fc2", torch::nn::Linear(kHidden, kHidden));
    out = register_module("out", torch::nn::Linear(kHidden, kClasses));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return out->forward(torch::relu(fc2->forward(torch::relu(fc1->forward(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, out{nullptr};
};
TORCH_MODULE(Net);

struct Precision {
  const char* name;
  torch::ScalarType dtype;  // kFloat: no autocast
};

// The canonical step, written once. fp32: autocast and scaler disabled; bf16: autocast only; fp16: both.
// Returns whether the optimizer stepped (false: the scaler found inf/NaN grads and skipped it).
bool train_step(Net& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler, torch::ScalarType dtype,
                         torch::Device device, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    amp::Autocast autocast(device, dtype, /*enabled=*/dtype != torch::kFloat);  // forward and loss only
    loss = F::cross_entropy(model->forward(x), y);                         // cross_entropy runs in fp32
  }
  scaler.scale(loss).backward();  // backward outside autocast; scale() is a no-op when disabled
  scaler.unscale_(opt);           // grads back to their true size, so the clip threshold means something
  torch::nn::utils::clip_grad_norm_(model->parameters(), kClipNorm);
  const bool stepped = scaler.step(opt);  // skipped if unscale_ found inf/NaN; the step's one host sync
  scaler.update();                        // back off or grow the scale (fp16)
  return stepped;
}

amp::GradScaler make_scaler(torch::Device device, torch::ScalarType dtype) {
  return amp::GradScaler(device, amp::GradScalerOptions{.growth_interval = kGrowthInterval,
                                                        .enabled = dtype == torch::kHalf});
}

torch::optim::AdamW make_opt(Net& model) {
  return torch::optim::AdamW(model->parameters(), torch::optim::AdamWOptions(kLr).weight_decay(kWeightDecay));
}

Net copy_of(const Net& m) { return Net(std::dynamic_pointer_cast<NetImpl>(m->clone())); }

struct Data {
  torch::Tensor x, y;
  torch::Tensor batch_x(int64_t step) const { return x.narrow(0, (step * kBatch) % kSamples, kBatch); }
  torch::Tensor batch_y(int64_t step) const { return y.narrow(0, (step * kBatch) % kSamples, kBatch); }
};

// Steps [from, to) of the run; returns the number of steps the scaler skipped. `scales`, if given,
// receives the scale after each step (one host sync per step, for the chart).
int train(Net& model, torch::optim::Optimizer& opt, amp::GradScaler& scaler, torch::ScalarType dtype,
          torch::Device device, const Data& d, int64_t from, int64_t to, std::vector<double>* scales = nullptr) {
  int skipped = 0;
  for (int64_t s = from; s < to; ++s) {
    skipped += !train_step(model, opt, scaler, dtype, device, d.batch_x(s), d.batch_y(s));
    if (scales) scales->push_back(scaler.get_scale());
  }
  return skipped;
}

double loss64(const Net& m, const Data& d) {
  torch::NoGradGuard no_grad;
  Net m64 = copy_of(m);
  m64->to(torch::kDouble);
  return F::cross_entropy(m64->forward(d.x.to(torch::kDouble)), d.y).item<double>();
}

lab::Report run(const lab::Context& ctx) {
  lab::Report r("amp-api", "torch.amp in C++: one training step for fp32, bf16 and fp16");
  const torch::Device dev = ctx.device;
  r.note("dtypes: fp32 weights, AdamW state and loss; autocast bf16/fp16 matmuls; all three run whatever --dtype says");
  if (ctx.flip) r.note("FLIP: the resumed runs load model and optimizer, but start with a fresh scaler");

  r.section("Python <-> C++ (amp-lab)");
  r.table("", {"Python", "C++"})
      .row({"torch.amp.autocast(\"cuda\"|\"cpu\", dtype=...)", "amp::Autocast ac(torch::kCUDA|kCPU, dtype)"})
      .row({"torch.amp.GradScaler(\"cuda\")", "amp::GradScaler scaler(device)"})
      .row({"GradScaler(\"cuda\", enabled=use_fp16)", "amp::GradScaler(device, {.enabled = use_fp16})"})
      .row({"scaler.scale(loss).backward()", "scaler.scale(loss).backward()"})
      .row({"scaler.unscale_(opt); clip_grad_norm_(...)", "scaler.unscale_(opt); torch::nn::utils::clip_grad_norm_"})
      .row({"scaler.step(opt); scaler.update()", "scaler.step(opt); scaler.update()"})
      .row({"torch.save({model, optimizer, scaler})", "amp::save_checkpoint(path, model, opt, scaler)"});
  // Which namespace is current is the quiz's question: said only after the answer.
  r.takeaway("torch.cuda.amp.autocast(...) and torch.cuda.amp.GradScaler() are the old, CUDA-only names: they print "
             "a FutureWarning since PyTorch 2.4 and point to torch.amp.autocast(\"cuda\") and torch.amp.GradScaler(\"cuda\")");

  // One seeded start, data labelled by a random teacher network.
  Data d;
  Net start, teacher;
  {
    torch::NoGradGuard no_grad;
    start->to(dev);
    teacher->to(dev);
    d.x = torch::randn({kSamples, kIn}, torch::device(dev));
    d.y = teacher->forward(d.x).argmax(/*dim=*/1);
  }
  const int64_t steps = ctx.size(200, 600, 80), half = steps / 2;
  const double initial = loss64(start, d);
  const lab::ScratchFile ckpt("amp_lab_06", ".pt");

  r.section(fmt::format("{} AdamW steps of a {}-{}-{}-{} MLP, batch {}, clip {}, checkpoint after step {}", steps,
                        kIn, kHidden, kHidden, kClasses, kBatch, kClipNorm, half));
  auto& t = r.table("", {"run", "autocast", "scaler", "final loss", "vs fp32", "skipped", "scale", "resumed == uninterrupted"});
  std::vector<double> finals, scales16;
  std::vector<std::string> names;
  std::vector<bool> same_run;
  double max_diff = 0, scale_ckpt = 0, final_scale = 1;
  int skipped16 = 0;
  for (const Precision p : {Precision{"fp32", torch::kFloat}, Precision{"bf16", torch::kBFloat16},
                            Precision{"fp16", torch::kHalf}}) {
    if (dev.is_cuda() && p.dtype == torch::kBFloat16 && !amp::cuda_supports_bf16()) continue;
    // The uninterrupted run, checkpointed (read-only) after step `half`.
    Net a = copy_of(start);
    auto opt_a = make_opt(a);
    auto scaler_a = make_scaler(dev, p.dtype);
    std::vector<double>* scales = p.dtype == torch::kHalf ? &scales16 : nullptr;
    int skipped = train(a, opt_a, scaler_a, p.dtype, dev, d, 0, half, scales);
    amp::save_checkpoint(ckpt, *a, opt_a, scaler_a);
    if (p.dtype == torch::kHalf) scale_ckpt = scaler_a.get_scale();
    skipped += train(a, opt_a, scaler_a, p.dtype, dev, d, half, steps, scales);
    // Resumed: a fresh random model, a fresh optimizer and scaler; only the checkpoint can make it equal.
    // Flipped, the scaler's saved state goes into a scaler that is thrown away.
    Net c;
    c->to(dev);
    auto opt_c = make_opt(c);
    auto scaler_c = make_scaler(dev, p.dtype), discarded = make_scaler(dev, p.dtype);
    amp::load_checkpoint(ckpt, *c, opt_c, ctx.flip ? discarded : scaler_c);
    std::filesystem::remove(ckpt);
    train(c, opt_c, scaler_c, p.dtype, dev, d, half, steps);

    double diff = 0;
    const bool same = lab::parameters_equal(*a, *c, &diff);
    same_run.push_back(same);
    names.push_back(p.name);
    max_diff = std::max(max_diff, diff);
    const double fin = loss64(a, d);
    finals.push_back(fin);
    if (p.dtype == torch::kHalf) {
      skipped16 = skipped;
      final_scale = scaler_a.get_scale();
    }
    t.row({p.name, p.dtype == torch::kFloat ? "off" : p.name, scaler_a.is_enabled() ? "on" : "off (no-op)",
           lab::sci(fin), fmt::format("{:.4f}x", fin / finals.front()), std::to_string(skipped),
           lab::num(scaler_a.get_scale()), same ? "bitwise" : fmt::format("no, max diff {}", lab::sci(diff))});
  }
  r.observe("initial_loss", "initial loss (fp64)", initial, "", lab::sci(initial));
  r.observe("final_loss_fp32", "final loss fp32 (fp64 eval)", finals.front(), "", lab::sci(finals.front()));
  double worst = 0;
  for (double f : finals) worst = std::max(worst, std::abs(f / finals.front() - 1.0));
  const int identical = static_cast<int>(std::count(same_run.begin(), same_run.end(), true));
  const bool fp16_same = !same_run.empty() && same_run.back();  // fp16 runs last
  r.observe("loss_spread", "largest gap of a 16-bit run's final loss to fp32's", worst * 100, "%");
  r.observe("skipped_steps_fp16", "fp16 steps skipped by the scaler", skipped16);
  r.observe("scale_at_checkpoint", "fp16 scale saved in the checkpoint", scale_ckpt);
  r.observe("final_scale_fp16", "fp16 final scale", final_scale);
  r.observe("resumed_identical", "runs whose resume was bitwise identical", identical, "",
            fmt::format("{} of {}", identical, finals.size()));
  r.observe("fp16_resumed_identical", "fp16 resume bitwise identical (1 = yes)", fp16_same);
  const auto [sampled, every] = lab::every_kth(scales16, kChartWidth);  // at most kChartWidth steps
  r.chart(lab::sparkline(fmt::format("fp16 loss scale over the uninterrupted run (every {} steps, log2)", every), sampled,
                         /*log2_scale=*/true));

  // A second unscale_ before update() double-divides the grads; the scaler refuses it.
  std::string message = "(no error)";
  {
    Net m = copy_of(start);
    auto opt = make_opt(m);
    amp::GradScaler scaler(dev);  // enabled: a disabled scaler's unscale_ does nothing
    torch::Tensor loss;
    {
      amp::Autocast ac(dev, torch::kHalf);
      loss = F::cross_entropy(m->forward(d.batch_x(0)), d.batch_y(0));
    }
    scaler.scale(loss).backward();
    scaler.unscale_(opt);
    try {
      scaler.unscale_(opt);
    } catch (const amp::GradScalerError& e) {
      message = e.what();
    }
  }
  const bool refused = message.find("already been called") != std::string::npos;
  r.observe("second_unscale_refused", "second unscale_ refused (1 = yes)", refused);
  r.note("amp::GradScalerError: " + message);

  bool trained = true, agree = true;
  for (double f : finals) {
    trained = trained && f < kTrained * initial;
    agree = agree && std::abs(f / finals.front() - 1.0) < kAgreeTol;
  }
  r.check(fmt::format("all precisions train (loss < {}x initial) and end within {} of fp32", kTrained,
                      lab::percent(kAgreeTol, 0)),
          finals.size() == (dev.is_cuda() && !amp::cuda_supports_bf16() ? 2u : 3u) && trained && agree,
          fmt::format("initial {}, largest gap to fp32 {}", lab::sci(initial), lab::percent(worst, 2)));
  std::string per_run;
  for (size_t i = 0; i < names.size(); ++i) per_run += fmt::format("{}{} {}", i ? ", " : "", names[i], same_run[i] ? "equal" : "differs");
  r.check("resuming from model, optimizer and scaler state reproduces the uninterrupted run bit for bit, in every precision",
          identical == static_cast<int>(finals.size()) && !finals.empty(),
          fmt::format("{}; max |diff| {}", per_run, lab::sci(max_diff)));
  r.check("a second unscale_ before update() is refused", refused, "caught amp::GradScalerError");
  return r;
}

}  // namespace

AMP_LAB_REGISTER("amp-api", /*question=*/6, "torch.amp in C++: one training step for fp32, bf16 and fp16",
                 /*heading=*/"One training step in fp32, bf16 and fp16, with a checkpoint halfway", run,
                 /*provides=*/{"initial_loss", "final_loss_fp32", "loss_spread", "skipped_steps_fp16",
                               "scale_at_checkpoint", "final_scale_fp16", "resumed_identical",
                               "second_unscale_refused"});
