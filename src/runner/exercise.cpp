// The exercises' catalog and hints, and reading a run's report into a verdict (runner/exercise.h).
//
// Each hint is a mistake the tests make on purpose (tests/exercises/NN_*.cpp, each naming the hint it
// expects) and the way the lab's report shows it: the check that fails, and where one check fails for
// several mistakes, the words of its evidence or an observation's value that tell them apart.
#include "runner/exercise.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>

#include "runner/exercise_files.h"

namespace runner {
namespace {

// How the lab's process ended, for the learner: signal N (reported as 128+N) by its name as strsignal
// gives it, "segmentation fault (signal 11)", not "exit code 139".
std::string ended_by(int exit_code) {
  const int signo = exit_code - 128;
  const char* name = signo > 0 && signo < NSIG ? ::strsignal(signo) : nullptr;
  if (!name) return "exit code " + std::to_string(exit_code);
  std::string text = name;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text + " (signal " + std::to_string(signo) + ")";
}

using H = ExerciseHint;

H on_check(std::string id, std::string check, std::string text) {
  return {.id = std::move(id), .check = std::move(check), .text = std::move(text)};
}
H on_evidence(std::string id, std::string check, std::string evidence, std::string text) {
  return {.id = std::move(id),
          .check = std::move(check),
          .text = std::move(text),
          .evidence = std::move(evidence)};
}
H on_value(std::string id, std::string check, std::string observation, double lo, double hi,
           std::string text) {
  return {.id = std::move(id),
          .check = std::move(check),
          .text = std::move(text),
          .observation = std::move(observation),
          .lo = lo,
          .hi = hi};
}
H on_error(std::string id, std::string error, std::string text) {
  return {.id = std::move(id), .text = std::move(text), .error = std::move(error)};
}

// The catalog, in the order `amp-lab exercises` lists it; a hint's text says what the report showed,
// then what to change.
const std::vector<ExerciseInfo> kExercises = {
    {"02",
     "02_loss_scaling",
     "loss-scaling",
     "the scale/step/update loop",
     {on_error("no-update", "step() has already been called since the last update()",
               "step() ran twice without an update() between them: call scaler.update() after every step"),
      on_error("unscaled-backward", "did not use scaler.scale",
               "step() found no scaled loss: back-propagate scaler.scale(loss), not loss"),
      on_check("unscaled-fp16", "unscaled-fp16-worse",
               "fp16 without scaling trains as well as with it: is the scaler used at all? scale the loss, "
               "step and update through it")}},
    {"06",
     "06_amp_api",
     "amp-api",
     "one training step for fp32, bf16 and fp16, and its checkpoint",
     {on_check("not-training", "every-precision-trains",
               "a precision did not train: back-propagate the scaled loss, then step and update through the "
               "scaler"),
      on_evidence("clip-scaled", "same-step-same-loss", "fp16",
                  "fp16 ends far from fp32 given the same steps: clip_grad_norm_ saw scaled gradients; call "
                  "scaler.unscale_(opt) before clipping"),
      on_evidence(
          "scaler-not-saved", "resume-bitwise", "fp32 equal, bf16 equal, fp16 differs",
          "only fp16 does not resume: the checkpoint must hold the training scaler's state (scale and "
          "growth tracker), saved and loaded with the model and optimizer"),
      on_check(
          "resume-nothing", "resume-bitwise",
          "the resumed runs differ: save() and resume() must write and read model, optimizer and scaler")}},
    {"09",
     "09_gradient_accumulation",
     "gradient-accumulation",
     "gradient accumulation, one update per batch",
     {on_value("loss-not-divided", "accumulated-equals-whole-fp32", "accum_vs_whole_fp32", 2.5, 3.5,
               "the update is 4x the whole batch's: divide each micro-batch's loss by kMicro"),
      on_value("zero-grad-inside", "accumulated-equals-whole-fp32", "accum_vs_whole_fp32", 0.5, 0.99,
               "the update is one micro-batch's, not the batch's: zero_grad() once, before the loop"),
      on_value("step-per-micro-batch", "accumulated-equals-whole-fp32", "accum_vs_whole_fp32", 1e-4, 0.5,
               "the optimizer stepped inside the effective batch: step() and update() ran per micro-batch; "
               "call them once, after the last micro-batch"),
      on_value("no-update-applied", "accumulated-equals-whole-fp32", "accum_vs_whole_fp32", 0.9999, 1.0001,
               "the weights did not move: back-propagate scaler.scale(loss), then step and update once")}},
    {"10",
     "10_gradient_penalty",
     "gradient-penalty",
     "a gradient penalty from the scaled loss",
     {on_evidence("penalty-scaled", "penalty-matches-fp64", "1024",
                  "the penalty is 1024x float64's, the scale: multiply autograd::grad's gradients by "
                  "1/scaler.get_scale() before the norm"),
      on_check("penalty-wrong", "penalty-matches-fp64",
               "the penalty is not float64's: the norm of autograd::grad(scaler.scale(loss)) times 1/scale"),
      on_check("no-create-graph", "penalty-gradients-match-fp64",
               "the optimizer's gradients miss the penalty's: pass create_graph=true to autograd::grad so "
               "the penalty is differentiated")}},
    {"11",
     "11_multiple_optimizers",
     "multiple-optimizers",
     "two optimizers on one scaler",
     {on_check("optimizer-step-direct", "inf-skips-its-optimizer",
               "the inf did not skip optimizer 0's step alone: step each optimizer through scaler.step(), "
               "then update() once"),
      on_value(
          "update-each-step", "unscaled-grads-match-fp32", "grad_error_after_m0", 0, 0.02,
          "model 0's gradients are right and model 1's not: update() ran between the two steps, so "
          "optimizer 1 divided by a scale its gradients were not made with; call update() once, after both"),
      on_check("loss1-unscaled", "unscaled-grads-match-fp32",
               "the applied gradients are not fp32's: scale both losses with the scaler before backward")}},
    {"12",
     "12_custom_autograd",
     "custom-autograd",
     "custom autograd functions with CustomFwd/CustomBwd",
     {on_evidence("no-custom-bwd", "custom-bwd-mixed-dtypes", "refused",
                  "MatMulAutocast's backward was refused by mm (an fp16 and an fp32 operand): guard backward "
                  "with amp::CustomBwd, which runs it under forward's autocast state"),
      on_check("no-cast-inputs", "cast-inputs-matches-fp64",
               "RowNormFp32 is not float64's: guard forward with amp::CustomFwd(ctx, device, "
               "/*cast_inputs=*/torch::kFloat) and compute on fwd.cast(h)")}},
    {"13",
     "13_data_parallel",
     "data-parallel",
     "the sharded inf/NaN verdict",
     {on_check("local-verdict", "sharded-global-matches-ddp",
               "the ranks still decide steps differently: with global_verdict, set the options' "
               "process_group to amp::found_inf_all_reduce(pg)"),
      on_check("global-everywhere", "sharded-local-diverges",
               "the local run agrees too: give the scaler the all-reduce only when global_verdict is true")}},
    {"14",
     "14_fp8_scaling",
     "fp8-scaling",
     "a per-tensor FP8 scale from an amax history",
     {on_evidence(
          "inverted-scale", "per-tensor-keeps-values", "100.0% of any tensor lost",
          "the scaled tensors lose nearly everything: the scale is max / 2^margin / amax, not its inverse"),
      on_evidence("no-saturation", "per-tensor-trains", "nan",
                  "a training run ended in NaN: saturate v at +-max (v.clamp(-max, max)) before the cast; an "
                  "E5M2 cast turns a value beyond its max into inf (E4M3fn saturates at 448)"),
      on_evidence("stale-history", "per-tensor-trains", "current 0.",
                  "current scaling trains, delayed does not: push each step's amax into the history, newest "
                  "first, and scale from the history's largest"),
      on_check("per-tensor-fails", "per-tensor-trains",
               "FP8 training with a per-tensor scale fails: the scale maps amax onto max / 2^margin")}},
};

std::string digits_of(const std::string& name) {
  return name.size() == 1 && std::isdigit(static_cast<unsigned char>(name[0])) ? "0" + name : name;
}

bool hint_matches(const ExerciseHint& h, const nlohmann::json& report) {
  if (!h.error.empty()) return false;
  for (const auto& c : report["checks"]) {
    if (c.value("key", "") != h.check || c.value("passed", true)) continue;
    if (!h.evidence.empty() && c.value("evidence", "").find(h.evidence) == std::string::npos) return false;
    if (h.observation.empty()) return true;
    const auto& obs = report["observations"];
    if (!obs.is_object() || !obs.contains(h.observation)) return false;
    const double v = obs[h.observation].value("value", 0.0);
    return v >= h.lo && v <= h.hi;
  }
  return false;
}

}  // namespace

const std::vector<ExerciseInfo>& exercises() {
  return kExercises;
}

const ExerciseInfo* find_exercise(const std::string& name) {
  const std::string id = digits_of(name);
  for (const auto& e : kExercises)
    if (e.id == id || e.stem == name || e.lab == name) return &e;
  return nullptr;
}

int Verdict::held() const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [](const auto& c) { return c.passed; }));
}

// One hint per failed check at most: the first that matches, the most specific being listed first.
std::vector<const ExerciseHint*> matching_hints(const ExerciseInfo& e, const nlohmann::json* report,
                                                const std::string& error) {
  std::vector<const ExerciseHint*> out;
  std::vector<std::string> used;
  for (const ExerciseHint& h : e.hints) {
    const bool match =
        report ? hint_matches(h, *report) : !h.error.empty() && error.find(h.error) != std::string::npos;
    if (!match || std::find(used.begin(), used.end(), h.check) != used.end()) continue;
    used.push_back(h.check);
    out.push_back(&h);
  }
  return out;
}

Verdict verdict_from_run(const ExerciseInfo& e, const std::string& json_text, int exit_code,
                         const std::string& stderr_text) {
  Verdict v;
  const auto report = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!report.is_object() || !report.contains("checks") || !report["checks"].is_array()) {
    v.kind = Verdict::LabError;
    // The lab's own one-line message ("lab09_...: lab failed: ..."), without the device notice before it.
    std::string last;
    for (size_t b = 0; b < stderr_text.size();) {
      const size_t end = std::min(stderr_text.find('\n', b), stderr_text.size());
      if (end > b) last = stderr_text.substr(b, end - b);
      b = end + 1;
    }
    v.output = last.empty() ? ended_by(exit_code) : last;
    v.hints = matching_hints(e, nullptr, v.output);
    return v;
  }
  for (const auto& c : report["checks"])
    v.checks.push_back(
        {c.value("key", ""), c.value("claim", ""), c.value("evidence", ""), c.value("passed", false)});
  v.kind = report.value("passed", false) && v.held() == static_cast<int>(v.checks.size()) ? Verdict::Passed
                                                                                          : Verdict::Failed;
  if (v.kind == Verdict::Failed) v.hints = matching_hints(e, &report, "");
  return v;
}

}  // namespace runner
