// Lab 08: what autocast does: it picks a dtype per op from documented lists; it does not convert
// everything (quiz question 8). The AMP code is in amp.cpp.
//
// 21 representative ops run under amp::Autocast (torch.autocast) and with autocast off, and the lab prints
// the dtype each returns. After the answer it sets them next to the policy PyTorch documents for the
// device (aten/src/ATen/autocast_mode.cpp; the lists below are written from it, not from a run):
// matmul-like ops go 16-bit, losses and prod fp32, mixed inputs are promoted, in-place ops, explicit
// dtypes and float64 are left alone; mv, addmv and addr are 16-bit on CUDA only. Then: a Linear layer
// computes in 16-bit while its parameters and gradients stay fp32, and its result is close to, not
// bitwise equal to, fp32's (both against float64); a nested Autocast(..., enabled=false) region switches
// autocast off. Every sentence the report makes about the ops is generated from the table.
//
// Run:  build/bin/lab08_autocast_policy [--device cpu|cuda] [--dtype fp16|bf16] [--quick] [--seed N] [--json]
//       (--quick changes nothing: the lab is small)
// --flip: amp.cpp's regions are given fp32 for their 16-bit type, so every one is constructed disabled
//         (Autocast(..., enabled=false)) and all six checks fail: policy-matches, per-op-choice,
//         in-place-left-alone, params-stay-fp32, close-not-bitwise, nested-region-off.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "amp.h"
#include "lab/libtorch.h"
#include "lab/measure.h"
#include "lab/registry.h"

namespace {

using namespace lab08;

constexpr int64_t kRows = 8;            // small operands: this lab is about dtypes, not speed
constexpr int64_t kCols = 16;           // feature width of the operands
constexpr int64_t kBatch = 64;          // rows of the Linear layer's input
constexpr int64_t kInFeatures = 512;    // the layer's inner dimension: long enough to round
constexpr int64_t kOutFeatures = 256;   // the layer's outputs
constexpr double kCloseEpsilons = 4.0;  // "close": max error under 4 epsilons of the 16-bit type
constexpr double kDifferShare = 0.5;    // "not bitwise equal": more than half the outputs differ

// ---- The documented policy (aten/src/ATen/autocast_mode.cpp) -----------------------------------------

enum class Rule {
  Lower,     // lower-precision list: eligible inputs cast to the 16-bit type
  Fp32,      // float32 list: eligible inputs cast to fp32
  Promote,   // promote list: inputs cast to the widest input type
  NoList,    // in no list: the op runs on the dtypes it is given (ordinary type promotion)
  InPlace,   // in-place ops are never autocast: the result keeps self's dtype
  Explicit,  // an explicit dtype= argument wins; autocast leaves the op alone
};

// How the report names a rule, and what it does to an input ("" for Lower: the 16-bit type).
constexpr std::pair<const char*, const char*> kRuleWords[] = {
    {"lower-precision list", ""},      {"float32 list", "fp32"},     {"promote list", "widest input"},
    {"no list", "follows its inputs"}, {"in-place", "not autocast"}, {"explicit dtype", "not autocast"}};

std::string rule_name(Rule rule) {
  return kRuleWords[static_cast<int>(rule)].first;
}

// The dtype a rule predicts. Float64 and non-floating tensors are never cast.
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

std::vector<OpCase> op_cases(torch::Device dev, torch::ScalarType lowp) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(dev);
  // fp32 operands as a model holds them; a 16-bit one as a matmul under autocast would hand it on.
  const auto a = torch::randn({kRows, kCols}, f32), b = torch::randn({kCols, kCols}, f32);
  const auto bias = torch::randn({kCols}, f32), half = torch::randn({kRows, kCols}, f32).to(lowp);
  const auto img = torch::randn({2, 3, 8, 8}, f32), kernel = torch::randn({4, 3, 3, 3}, f32);
  const auto a3 = a.unsqueeze(0), b3 = b.unsqueeze(0), acc = torch::randn({kRows, kCols}, f32);
  const auto v = torch::randn({kCols}, f32), w = torch::randn({kCols}, f32);
  const auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  const std::string lp = lab::short_name(lowp);
  using R = Rule;
  return {
      {"mm", {a, b}, [=] { return torch::mm(a, b); }, R::Lower, R::Lower},
      {"matmul", {a, b}, [=] { return torch::matmul(a, b); }, R::Lower, R::Lower},
      {"linear", {a, b, bias}, [=] { return torch::linear(a, b, bias); }, R::Lower, R::Lower},
      {"conv2d", {img, kernel}, [=] { return torch::conv2d(img, kernel); }, R::Lower, R::Lower},
      {"bmm", {a3, b3}, [=] { return torch::bmm(a3, b3); }, R::Lower, R::Lower},
      {"softmax", {half}, [=] { return torch::softmax(half, 1); }, R::NoList, R::Fp32},
      {"log_softmax", {half}, [=] { return torch::log_softmax(half, 1); }, R::NoList, R::Fp32},
      {"sum", {half}, [=] { return half.sum(); }, R::NoList, R::Fp32},
      {"exp", {half}, [=] { return half.exp(); }, R::NoList, R::Fp32},
      {"layer_norm", {half}, [=] { return torch::layer_norm(half, {kCols}); }, R::NoList, R::Fp32},
      {"mse_loss", {half, half}, [=] { return torch::mse_loss(half, half.flip(0)); }, R::Fp32, R::Fp32},
      {"add", {half, a}, [=] { return half + a; }, R::NoList, R::NoList},
      {"cat",
       {half, a},
       [=] {
         return torch::cat({half, a});
       },
       R::Promote,
       R::NoList},
      {"addmm", {acc, a, b}, [=] { return torch::addmm(acc, a, b); }, R::Lower, R::Lower},
      {"addmm_ (in-place)", {acc, a, b}, [=] { return acc.clone().addmm_(a, b); }, R::InPlace, R::InPlace},
      {"prod", {half}, [=] { return half.prod(); }, R::Fp32, R::Fp32},
      {"prod(dtype=" + lp + ")", {half}, [=] { return half.prod(lowp); }, R::Explicit, R::Explicit, lowp},
      {"mv", {b, v}, [=] { return torch::mv(b, v); }, R::NoList, R::Lower},
      {"addmv", {w, b, v}, [=] { return torch::addmv(w, b, v); }, R::NoList, R::Lower},
      {"addr", {b, v, w}, [=] { return torch::addr(b, v, w); }, R::NoList, R::Lower},
      {"mm (fp64 inputs)", {a64, b64}, [=] { return torch::mm(a64, b64); }, R::Lower, R::Lower},
  };
}

// ---- measure ------------------------------------------------------------------------------------------

struct OpRow {
  std::string name, inputs;
  torch::ScalarType got, off, want;  // under autocast, with autocast off, as the policy predicts
  bool bitwise_same = false;         // the autocast output equals the autocast-off output bit for bit
  Rule rule = Rule::NoList, cpu = Rule::NoList, cuda = Rule::NoList;
  bool all_fp32 = true, fp64_input = false;
};

struct Result {
  lab::Context ctx;
  std::vector<OpRow> ops;
  torch::ScalarType layer_dtype = torch::kFloat;
  int params = 0, params_fp32 = 0;  // parameters whose value and gradient are fp32
  double err_amp = 0, err_fp32 = 0, differ_share = 0;
  NestedDtypes nested{};
};

Result measure(const lab::Context& ctx) {
  Result m{.ctx = ctx};
  // The type the autocast regions get; --flip: fp32, so that each is constructed disabled.
  const torch::ScalarType lowp = ctx.flip ? torch::kFloat : ctx.dtype;
  for (const OpCase& op : op_cases(ctx.device, ctx.dtype)) {
    const torch::Tensor out = under_autocast(ctx.device, lowp, op.run);
    const torch::Tensor off = op.run();  // autocast off: the dtype the op gives by itself
    OpRow row{.name = op.name,
              .inputs = lab::short_names(op.inputs),
              .got = out.scalar_type(),
              .off = off.scalar_type(),
              .rule = ctx.cuda() ? op.cuda : op.cpu,
              .cpu = op.cpu,
              .cuda = op.cuda};
    row.want = expected_dtype(row.rule, op.inputs, ctx.dtype, op.explicit_dtype);
    row.bitwise_same = row.got == row.off && torch::equal(out, off);
    for (const auto& t : op.inputs) {
      row.all_fp32 &= t.scalar_type() == torch::kFloat;
      row.fp64_input |= t.scalar_type() == torch::kDouble;
    }
    m.ops.push_back(row);
  }

  torch::nn::Linear layer(torch::nn::LinearOptions(kInFeatures, kOutFeatures));
  layer->to(ctx.device);
  const auto x = torch::randn({kBatch, kInFeatures}, torch::TensorOptions().device(ctx.device));
  const torch::Tensor y_amp = forward_backward(layer, x, lowp);
  m.layer_dtype = y_amp.scalar_type();
  for (const auto& p : layer->parameters()) {
    ++m.params;
    m.params_fp32 += p.scalar_type() == torch::kFloat && p.grad().scalar_type() == torch::kFloat;
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor y_fp32 = layer->forward(x);
  const torch::Tensor y_ref =
      torch::linear(x.to(torch::kDouble), layer->weight.to(torch::kDouble), layer->bias.to(torch::kDouble));
  m.err_amp = lab::max_rel_error(y_amp, y_ref);
  m.err_fp32 = lab::max_rel_error(y_fp32, y_ref);
  m.differ_share = y_amp.to(torch::kFloat).ne(y_fp32).to(torch::kDouble).mean().item<double>();

  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(ctx.device);
  m.nested = nested_off(torch::randn({kRows, kCols}, f32), torch::randn({kCols, kCols}, f32), lowp);
  return m;
}

// ---- report: every sentence about the ops is generated from the rows -------------------------------------

// "mm, matmul and linear"; "none".
std::string names_of(const std::vector<const OpRow*>& rows) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i)
    out += (i == 0 ? "" : i + 1 == rows.size() ? " and " : ", ") + rows[i]->name;
  return rows.empty() ? "none" : out;
}

std::vector<const OpRow*> select(const Result& m, const std::function<bool(const OpRow&)>& keep) {
  std::vector<const OpRow*> out;
  for (const OpRow& row : m.ops)
    if (keep(row)) out.push_back(&row);
  return out;
}

bool wide(torch::ScalarType t) {
  return t == torch::kFloat || t == torch::kDouble;
}

// An observation that counts rows and names them: "2 of 21 (mse_loss and prod)".
void observe_rows(lab::Report& r, const Result& m, const std::string& key, const std::string& label,
                  const std::vector<const OpRow*>& rows) {
  r.observe(key, label, static_cast<double>(rows.size()), "",
            lab::count_of(static_cast<long long>(rows.size()), static_cast<long long>(m.ops.size())) +
                (rows.empty() ? "" : " (" + names_of(rows) + ")"));
}

// The documented policy, grouped by rule and the dtype it predicts: "float32 list -> fp32: mse_loss, prod".
void report_policy(const Result& m, lab::Report& r, const std::string& dev) {
  std::vector<std::pair<std::string, std::string>> groups;
  for (const OpRow& row : m.ops) {
    std::string group = rule_name(row.rule);
    const std::string effect = kRuleWords[static_cast<int>(row.rule)].second;
    if (row.fp64_input && (row.rule == Rule::Lower || row.rule == Rule::Fp32))
      group += ", but fp64 is never cast";
    else if (row.rule != Rule::Lower && row.rule != Rule::Fp32)
      group += ", " + effect;
    group += " -> " + lab::short_name(row.want);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == group; });
    if (it == groups.end())
      groups.push_back({group, row.name});
    else
      it->second += ", " + row.name;
  }
  r.detail_section("The autocast policy documented for " + dev + " (aten/src/ATen/autocast_mode.cpp)");
  for (const auto& [group, names] : groups) r.note(group + ": " + names);
  for (const OpRow& row : m.ops)
    if (row.got != row.want)
      r.note(fmt::format("MISMATCH: {} gave {}, the policy predicts {}", row.name, lab::short_name(row.got),
                         lab::short_name(row.want)));
  // Where the documented lists differ between the devices, grouped by (CPU rule, CUDA rule).
  std::vector<std::pair<std::pair<Rule, Rule>, std::string>> differ;
  for (const OpRow& row : m.ops) {
    if (row.cpu == row.cuda) continue;
    auto it = std::find_if(differ.begin(), differ.end(),
                           [&](const auto& d) { return d.first == std::pair(row.cpu, row.cuda); });
    if (it == differ.end())
      differ.push_back({{row.cpu, row.cuda}, row.name});
    else
      it->second += ", " + row.name;
  }
  std::string text;
  for (const auto& [rules, names] : differ)
    text += (text.empty() ? "" : "; ") + names + ": " + rule_name(rules.first) + " on the CPU, " +
            rule_name(rules.second) + " on CUDA";
  r.observe("device_differences", "CPU and CUDA lists differ", static_cast<double>(differ.size()), "", text);
}

const OpRow* find_op(const Result& m, const std::string& name) {
  for (const OpRow& row : m.ops)
    if (row.name == name) return &row;
  return nullptr;
}

void report_checks(const Result& m, lab::Report& r) {
  const std::string dev = m.ctx.device.str(), lp = lab::short_name(m.ctx.dtype);
  const int n = static_cast<int>(m.ops.size());
  const auto matching = select(m, [](const OpRow& o) { return o.got == o.want; });
  const auto lower = select(m, [](const OpRow& o) { return o.rule == Rule::Lower && o.all_fp32; });
  const auto lower_16bit =
      select(m, [](const OpRow& o) { return o.rule == Rule::Lower && o.all_fp32 && lab::is_16bit(o.got); });
  const auto not_16bit = select(m, [](const OpRow& o) { return !lab::is_16bit(o.got); });
  const auto changed = select(m, [](const OpRow& o) { return o.got != o.off; });
  r.check("policy-matches", "every output dtype matches the autocast policy documented for " + dev,
          static_cast<int>(matching.size()) == n,
          lab::count_of(static_cast<long long>(matching.size()), n) + " rows match");
  r.check(
      "per-op-choice",
      "autocast chooses per op: " + names_of(lower) + " run in " + lp + ", and not every op does",
      lower_16bit.size() == lower.size() && !not_16bit.empty(),
      fmt::format("{} of {} lower-precision-list ops turned fp32 inputs into {}; {} of {} ops gave fp32 or "
                  "fp64",
                  lower_16bit.size(), lower.size(), lp, not_16bit.size(), n));
  const OpRow *addmm = find_op(m, "addmm"), *addmm_ = find_op(m, "addmm_ (in-place)");
  const bool addmm_16bit = addmm && lab::is_16bit(addmm->got), inplace_same = addmm_ && addmm_->bitwise_same;
  r.check("in-place-left-alone",
          "autocast changes an out-of-place op, not an in-place one: addmm gives " + lp +
              ", addmm_ stays bitwise equal to its result with autocast off",
          addmm_16bit && inplace_same && !changed.empty(),
          fmt::format("addmm {}, addmm_ {}; {} of {} ops changed dtype",
                      addmm ? lab::short_name(addmm->got) : "?", inplace_same ? "bitwise equal" : "differs",
                      changed.size(), n));
  r.check("params-stay-fp32",
          "the layer computes in " + lp + " while its parameters and their gradients stay fp32",
          lab::is_16bit(m.layer_dtype) && m.params_fp32 == m.params,
          fmt::format("output {}; {} of {} parameters and their grads are fp32",
                      lab::short_name(m.layer_dtype), m.params_fp32, m.params));
  const double eps = m.ctx.dtype == torch::kHalf ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  r.check("close-not-bitwise", "the autocast result is close to, but not bitwise equal to, the fp32 result",
          m.differ_share > kDifferShare && m.err_amp < kCloseEpsilons * eps,
          fmt::format("{} of outputs differ (need > {}); max error {} < {} x eps({}) = {}",
                      lab::percent(m.differ_share), lab::percent(kDifferShare, 0), lab::sci(m.err_amp),
                      lab::num(kCloseEpsilons), lp, lab::sci(kCloseEpsilons * eps)));
  const NestedDtypes& d = m.nested;
  r.check("nested-region-off", "a nested Autocast(enabled=false) region turns autocast off, and only there",
          lab::is_16bit(d.outer) && d.inner == torch::kFloat && !d.inner_enabled && lab::is_16bit(d.after),
          fmt::format(
              "mm gives {} in the region, {} inside the nested region (autocast enabled: {}), {} after it",
              lab::short_name(d.outer), lab::short_name(d.inner), d.inner_enabled ? "yes" : "no",
              lab::short_name(d.after)));
}

void report(const Result& m, lab::Report& r) {
  const std::string dev = m.ctx.device.str(), lp = lab::short_name(m.ctx.dtype);
  const bool on = !m.ctx.flip;
  r.dtypes(lp, "fp32 parameters, " + lp + " autocast (--dtype), float64 reference");
  if (!on) r.note("FLIP: the same ops run with autocast disabled (Autocast(..., enabled=false))");
  r.section(fmt::format("{} ops under Autocast({}, {}{}) and off ({} inputs: a matmul's output)",
                        m.ops.size(), dev, lp, on ? "" : ", enabled=false", lp));
  auto& table = r.table("", {"op", "inputs", "autocast", "autocast off"});
  for (const OpRow& row : m.ops)
    table.row({row.name, row.inputs, lab::short_name(row.got),
               lab::short_name(row.off) + (row.bitwise_same ? ", bitwise equal" : "")});

  // After the answer: the op table alone is the screen before the question (it fits 80x40).
  r.detail_section(fmt::format("One Linear({}, {}) layer, batch {}: autocast and fp32, both against fp64",
                               kInFeatures, kOutFeatures, kBatch));
  r.observe("autocast_rel_err", "autocast max error vs fp64 (share of max |y|)", m.err_amp, "",
            lab::sci(m.err_amp));
  r.observe("fp32_rel_err", "fp32 max error vs fp64 (share of max |y|)", m.err_fp32, "",
            lab::sci(m.err_fp32));
  r.observe("bitwise_differ_share", "outputs not bitwise equal to the fp32 result", m.differ_share * 100,
            "%");

  report_policy(m, r, dev);
  const int n = static_cast<int>(m.ops.size());
  const auto matching = select(m, [](const OpRow& o) { return o.got == o.want; });
  const auto to_16bit =
      select(m, [](const OpRow& o) { return lab::is_16bit(o.got) && !lab::is_16bit(o.off); });
  const auto to_fp32 = select(m, [](const OpRow& o) { return wide(o.got) && !wide(o.off); });
  const auto kept_wide = select(m, [](const OpRow& o) { return wide(o.got) && o.got == o.off; });
  const auto kept_16bit = select(m, [](const OpRow& o) { return lab::is_16bit(o.got) && o.got == o.off; });
  const auto fp32_or_wider = select(m, [](const OpRow& o) { return wide(o.got); });
  const auto changed = select(m, [](const OpRow& o) { return o.got != o.off; });
  const auto left_alone = select(
      m, [](const OpRow& o) { return o.rule == Rule::InPlace || o.rule == Rule::Explicit || o.fp64_input; });
  r.detail_section("The table, counted");
  r.observe("layer_params_fp32", "the Linear layer under autocast", m.params_fp32, "",
            fmt::format("{} output, with {} of {} parameters and their gradients in fp32",
                        lab::short_name(m.layer_dtype), m.params_fp32, m.params));
  r.observe("policy_matches", "outputs matching the documented policy", matching.size(), "",
            lab::count_of(static_cast<long long>(matching.size()), n));
  observe_rows(r, m, "ops_changed", "ops whose output dtype autocast changed", changed);
  observe_rows(r, m, "ops_to_16bit", "ops autocast moved to " + lp, to_16bit);
  observe_rows(r, m, "ops_to_fp32", "ops autocast moved to fp32", to_fp32);
  observe_rows(r, m, "ops_fp32_or_wider", "ops whose output is fp32 or wider under autocast", fp32_or_wider);
  observe_rows(r, m, "ops_kept_wide", "ops fp32 or wider with and without autocast", kept_wide);
  observe_rows(r, m, "ops_kept_16bit", "ops left in the 16-bit type of their inputs", kept_16bit);
  std::string alone;
  bool all_same = !left_alone.empty();
  for (const OpRow* o : left_alone) {
    alone += fmt::format("{}{} gave {}", alone.empty() ? "" : ", ", o->name, lab::short_name(o->got));
    all_same &= o->bitwise_same;
  }
  r.observe("ops_left_alone", "in-place, explicit-dtype and fp64 ops", static_cast<double>(left_alone.size()),
            "", alone + (all_same ? ", each bitwise equal to its result with autocast off" : ""));
  report_checks(m, r);
}

}  // namespace

AMP_LAB(measure, report);
