// Lab 08: what autocast does: it picks a dtype per op, it does not convert everything.
//
// Backs quiz question 8 ("What does autocast do in automatic mixed precision?"). Representative ops run
// under amp::Autocast and with autocast off; the lab prints the dtype each returns next to the policy
// PyTorch documents for the device (aten/src/ATen/autocast_mode.cpp, reference section 2; derived from
// the op lists below, not from a run) and counts the ops autocast changed: matmul-like ops go 16-bit,
// losses and prod fp32, mixed inputs are promoted, in-place ops, explicit dtypes and float64 are left
// alone; mv, addmv and addr are 16-bit on CUDA only. Then: a layer computes in 16-bit while its
// parameters stay fp32; its result is close to, not bitwise equal to, fp32's (both against float64);
// a nested Autocast(..., enabled=false) region switches autocast off.
//
// Run alone:  build/bin/lab08_autocast_policy [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--flip]
// --flip: the same ops run with autocast disabled, so every check must FAIL. --quick changes nothing.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "amp/autocast.h"
#include "lab/measure.h"
#include "lab/registry.h"

namespace {

constexpr int64_t kRows = 8;            // small operands: this lab is about dtypes, not speed
constexpr int64_t kCols = 16;           // feature width of the operands
constexpr int64_t kBatch = 64;          // rows of the accuracy comparison
constexpr int64_t kInFeatures = 512;    // inner dimension of the accuracy comparison: enough to round
constexpr int64_t kOutFeatures = 256;   // outputs of the accuracy comparison
constexpr double kCloseEpsilons = 4.0;  // "close": max error under 4 epsilons of the 16-bit type

// The documented rule for an op on one device (reference section 2).
enum class Rule {
  Lower,     // lower-precision list: eligible inputs cast to the 16-bit type
  Fp32,      // float32 list: eligible inputs cast to fp32
  Promote,   // promote list: inputs cast to the widest input type
  NoList,    // in no list: the op runs on the dtypes it is given (ordinary type promotion)
  InPlace,   // in-place ops are never autocast: the result keeps self's dtype
  Explicit,  // an explicit dtype= argument wins; autocast leaves the op alone
};

// How the table names a rule, and what it does to an fp32 or 16-bit input ("" for Lower: the 16-bit type).
constexpr std::pair<const char*, const char*> kRuleWords[] = {
    {"lower-precision list", ""},          {"float32 list", "fp32"},           {"promote list", "widest input"},
    {"no list", "follows its inputs"},     {"in-place", "not autocast"},       {"explicit dtype", "not autocast"}};

std::string rule_name(Rule rule) { return kRuleWords[static_cast<int>(rule)].first; }

std::string rule_text(Rule rule, torch::ScalarType lowp, bool fp64_input) {
  if (fp64_input && (rule == Rule::Lower || rule == Rule::Fp32)) return rule_name(rule) + ", but fp64 is never cast";
  const std::string effect = rule == Rule::Lower ? lab::short_name(lowp) : kRuleWords[static_cast<int>(rule)].second;
  return rule_name(rule) + ": " + effect;
}

// The dtype a rule predicts. Float64 and non-floating tensors are never cast (reference section 1).
torch::ScalarType expected_dtype(Rule rule, const std::vector<torch::Tensor>& inputs, torch::ScalarType lowp,
                                 torch::ScalarType explicit_dtype) {
  if (rule == Rule::InPlace) return inputs.front().scalar_type();
  if (rule == Rule::Explicit) return explicit_dtype;
  std::optional<torch::ScalarType> out;
  for (const auto& t : inputs) {
    torch::ScalarType d = t.scalar_type();
    const bool eligible = t.is_floating_point() && d != torch::kDouble;
    if (eligible && rule == Rule::Lower) d = lowp;
    if (eligible && rule == Rule::Fp32) d = torch::kFloat;
    out = out ? c10::promoteTypes(*out, d) : d;
  }
  return *out;
}

struct OpCase {
  std::string name;
  std::vector<torch::Tensor> inputs;
  std::function<torch::Tensor()> run;
  Rule cpu, cuda;  // the documented rule on each device
  torch::ScalarType explicit_dtype = torch::kFloat;
};

lab::Report run(const lab::Context& ctx) {
  lab::Report r("autocast-policy", "Autocast picks a dtype per op; it does not convert everything");
  const auto dev = ctx.device;
  const auto lowp = ctx.dtype;
  const std::string lp = lab::short_name(lowp);
  const bool on = !ctx.flip;  // --flip: every "autocast" region below is constructed disabled
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(dev);
  r.note("dtypes: fp32 inputs and parameters, " + lp + " as the autocast type, fp64 for references");
  if (ctx.flip) r.note("--flip: the same ops run with autocast disabled (Autocast(..., enabled=false))");

  // Operands: fp32 as a model holds them, a 16-bit one as a matmul under autocast would hand on.
  const auto a = torch::randn({kRows, kCols}, f32), b = torch::randn({kCols, kCols}, f32);
  const auto bias = torch::randn({kCols}, f32), half = torch::randn({kRows, kCols}, f32).to(lowp);
  const auto img = torch::randn({2, 3, 8, 8}, f32), kernel = torch::randn({4, 3, 3, 3}, f32);
  const auto a3 = a.unsqueeze(0), b3 = b.unsqueeze(0), acc = torch::randn({kRows, kCols}, f32);
  const auto v = torch::randn({kCols}, f32), w = torch::randn({kCols}, f32);
  const auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  const std::vector<OpCase> cases = {
      {"mm", {a, b}, [&] { return torch::mm(a, b); }, Rule::Lower, Rule::Lower},
      {"matmul", {a, b}, [&] { return torch::matmul(a, b); }, Rule::Lower, Rule::Lower},
      {"linear", {a, b, bias}, [&] { return torch::linear(a, b, bias); }, Rule::Lower, Rule::Lower},
      {"conv2d", {img, kernel}, [&] { return torch::conv2d(img, kernel); }, Rule::Lower, Rule::Lower},
      {"bmm", {a3, b3}, [&] { return torch::bmm(a3, b3); }, Rule::Lower, Rule::Lower},
      {"softmax", {half}, [&] { return torch::softmax(half, /*dim=*/1); }, Rule::NoList, Rule::Fp32},
      {"log_softmax", {half}, [&] { return torch::log_softmax(half, /*dim=*/1); }, Rule::NoList, Rule::Fp32},
      {"sum", {half}, [&] { return half.sum(); }, Rule::NoList, Rule::Fp32},
      {"exp", {half}, [&] { return half.exp(); }, Rule::NoList, Rule::Fp32},
      {"layer_norm", {half}, [&] { return torch::layer_norm(half, {kCols}); }, Rule::NoList, Rule::Fp32},
      {"mse_loss", {half, half}, [&] { return torch::mse_loss(half, half.flip(0)); }, Rule::Fp32, Rule::Fp32},
      {"add", {half, a}, [&] { return half + a; }, Rule::NoList, Rule::NoList},
      {"cat", {half, a}, [&] { return torch::cat({half, a}); }, Rule::Promote, Rule::NoList},
      {"addmm", {acc, a, b}, [&] { return torch::addmm(acc, a, b); }, Rule::Lower, Rule::Lower},
      {"addmm_ (in-place)", {acc, a, b}, [&] { return acc.clone().addmm_(a, b); }, Rule::InPlace, Rule::InPlace},
      {"prod", {half}, [&] { return half.prod(); }, Rule::Fp32, Rule::Fp32},
      {"prod(dtype=" + lp + ")", {half}, [&] { return half.prod(lowp); }, Rule::Explicit, Rule::Explicit, lowp},
      {"mv", {b, v}, [&] { return torch::mv(b, v); }, Rule::NoList, Rule::Lower},
      {"addmv", {w, b, v}, [&] { return torch::addmv(w, b, v); }, Rule::NoList, Rule::Lower},
      {"addr", {b, v, w}, [&] { return torch::addr(b, v, w); }, Rule::NoList, Rule::Lower},
      {"mm (fp64 inputs)", {a64, b64}, [&] { return torch::mm(a64, b64); }, Rule::Lower, Rule::Lower},
  };

  r.section("Op by op under Autocast(" + dev.str() + ", " + lp + (on ? "" : ", enabled=false") +
            "); 16-bit inputs stand for an earlier matmul's output");
  auto& table = r.table("", {"op", "inputs", "output", "autocast off", "documented policy on " + dev.str()});
  int matches = 0, matmul_16bit = 0, lower_rows = 0, kept_wide = 0, changed = 0;
  bool addmm_16bit = false, addmm_inplace_same = false;
  std::string lower_names;
  for (const auto& op : cases) {
    torch::Tensor out;
    {
      amp::Autocast guard(dev, lowp, /*enabled=*/on);
      out = op.run();
    }
    const torch::Tensor off = op.run();  // autocast off: the dtype the op gives by itself
    const torch::ScalarType got = out.scalar_type();
    const bool same = got == off.scalar_type() && torch::equal(out, off);
    changed += got != off.scalar_type();
    if (op.name == "addmm") addmm_16bit = lab::is_16bit(got);
    if (op.name == "addmm_ (in-place)") addmm_inplace_same = same;
    const Rule rule = ctx.cuda() ? op.cuda : op.cpu;
    const torch::ScalarType want = expected_dtype(rule, op.inputs, lowp, op.explicit_dtype);
    matches += got == want;
    bool all_fp32 = true, fp64_input = false;
    for (const auto& t : op.inputs) {
      all_fp32 &= t.scalar_type() == torch::kFloat;
      fp64_input |= t.scalar_type() == torch::kDouble;
    }
    if (rule == Rule::Lower && all_fp32) {
      ++lower_rows;
      matmul_16bit += lab::is_16bit(got);
      lower_names += (lower_names.empty() ? "" : ", ") + op.name;
    }
    if (!lab::is_16bit(got)) ++kept_wide;
    table.row({op.name, lab::short_names(op.inputs),
               lab::short_name(got) + (got == want ? "" : "  (expected " + lab::short_name(want) + ")"),
               lab::short_name(off.scalar_type()) + (same ? ", bitwise equal" : ""), rule_text(rule, lowp, fp64_input)});
  }
  // Where the documented lists differ between the devices, grouped by (CPU rule, CUDA rule).
  std::vector<std::pair<std::pair<Rule, Rule>, std::string>> differ;
  for (const auto& op : cases) {
    if (op.cpu == op.cuda) continue;
    auto it = std::find_if(differ.begin(), differ.end(), [&](const auto& d) { return d.first == std::pair(op.cpu, op.cuda); });
    if (it == differ.end()) differ.push_back({{op.cpu, op.cuda}, op.name});
    else it->second += ", " + op.name;
  }
  for (const auto& [rules, names] : differ)
    r.note("CPU vs CUDA: " + names + ": " + rule_name(rules.first) + " on CPU, " + rule_name(rules.second) + " on CUDA");
  const int n = static_cast<int>(cases.size());
  r.observe("policy_matches", "outputs matching the documented policy", matches, "", lab::count_of(matches, n));
  r.observe("ops_fp32_or_wider", "ops whose output is fp32 or wider", kept_wide, "", lab::count_of(kept_wide, n));
  r.observe("ops_changed", "ops whose output dtype autocast changed", changed, "", lab::count_of(changed, n));

  // A layer: parameters stay fp32; autocast only computes with 16-bit copies of them.
  r.section("One Linear(" + std::to_string(kInFeatures) + ", " + std::to_string(kOutFeatures) + ") layer, batch " +
            std::to_string(kBatch) + ": autocast vs fp32, both against fp64");
  torch::nn::Linear layer(torch::nn::LinearOptions(kInFeatures, kOutFeatures));
  layer->to(dev);
  const auto x = torch::randn({kBatch, kInFeatures}, f32);
  torch::Tensor y_amp;
  {
    amp::Autocast guard(dev, lowp, /*enabled=*/on);
    y_amp = layer->forward(x);
  }
  y_amp.to(torch::kFloat).sum().backward();  // backward outside autocast, as recommended
  const torch::ScalarType layer_dtype = y_amp.scalar_type();
  int params_fp32 = 0, params = 0;
  for (const auto& p : layer->parameters()) {
    ++params;
    params_fp32 += p.scalar_type() == torch::kFloat && p.grad().scalar_type() == torch::kFloat;
  }
  torch::Tensor y_fp32, y_ref;
  {
    torch::NoGradGuard no_grad;
    y_fp32 = layer->forward(x);
    y_ref = torch::linear(x.to(torch::kDouble), layer->weight.to(torch::kDouble), layer->bias.to(torch::kDouble));
  }
  const double err_amp = lab::max_rel_error(y_amp, y_ref), err_fp32 = lab::max_rel_error(y_fp32, y_ref);
  const double differ_share = y_amp.to(torch::kFloat).ne(y_fp32).to(torch::kDouble).mean().item<double>();
  const double eps = lowp == torch::kHalf ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  r.observe("autocast_rel_err", "autocast max error vs fp64 (share of max |y|)", err_amp, "", lab::sci(err_amp));
  r.observe("fp32_rel_err", "fp32 max error vs fp64 (share of max |y|)", err_fp32, "", lab::sci(err_fp32));
  r.observe("bitwise_differ_share", "outputs not bitwise equal to the fp32 result", differ_share * 100, "%");

  // Nesting: an enabled=false region inside an autocast region turns it off, and only there.
  torch::ScalarType outer, inner, after;
  bool inner_enabled;
  {
    amp::Autocast guard(dev, lowp, /*enabled=*/on);
    outer = torch::mm(a, b).scalar_type();
    {
      amp::Autocast off(dev, lowp, /*enabled=*/false);
      inner = torch::mm(a, b).scalar_type();
      inner_enabled = amp::is_autocast_enabled(dev.type());
    }
    after = torch::mm(a, b).scalar_type();
  }

  r.check("every output dtype matches the documented autocast policy for " + dev.str(), matches == n,
          lab::count_of(matches, n) + " rows match");
  r.check("autocast chooses per op: " + lower_names + " run in " + lp + ", not every op does",
          matmul_16bit == lower_rows && kept_wide > 0,
          std::to_string(matmul_16bit) + " of " + std::to_string(lower_rows) + " matmul-like ops turned fp32 inputs into " +
              lp + "; " + std::to_string(kept_wide) + " of " + std::to_string(n) + " ops gave fp32 or fp64");
  r.check("autocast changes an out-of-place op, not an in-place one: addmm gives " + lp +
              ", addmm_ stays bitwise equal to its result with autocast off",
          addmm_16bit && addmm_inplace_same && changed > 0,
          "addmm " + std::string(addmm_16bit ? "16-bit" : "not 16-bit") + ", addmm_ " +
              (addmm_inplace_same ? "bitwise equal" : "differs") + "; " + std::to_string(changed) + " of " +
              std::to_string(n) + " ops changed dtype");
  r.check("the layer computes in " + lp + " while its parameters and their gradients stay fp32",
          lab::is_16bit(layer_dtype) && params_fp32 == params,
          "output " + lab::short_name(layer_dtype) + "; " + std::to_string(params_fp32) + " of " + std::to_string(params) +
              " parameters and grads are fp32");
  r.check("the autocast result is close to, but not bitwise equal to, the fp32 result",
          differ_share > 0.5 && err_amp < kCloseEpsilons * eps,
          lab::percent(differ_share) + " of outputs differ (need > 50%); max error " + lab::sci(err_amp) +
              " < " + lab::num(kCloseEpsilons) + " x eps(" + lp + ") = " + lab::sci(kCloseEpsilons * eps));
  r.check("a nested Autocast(enabled=false) region turns autocast off, and only there",
          lab::is_16bit(outer) && inner == torch::kFloat && !inner_enabled && lab::is_16bit(after),
          "mm gives " + lab::short_name(outer) + " in the region, " + lab::short_name(inner) +
              " inside the nested region (autocast enabled: " + (inner_enabled ? "yes" : "no") + "), " +
              lab::short_name(after) + " after it");
  return r;
}

}  // namespace

AMP_LAB_RUN(run);
