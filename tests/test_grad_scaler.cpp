// amp::GradScaler: torch.amp.GradScaler's semantics, one behaviour per test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include <ATen/record_function.h>

#include "amp/device_caps.h"
#include "amp/grad_scaler.h"
#include "doctest_torch.h"
#include "lab/libtorch.h"
#include "support/training_problem.h"

namespace test_grad_scaler {

namespace {

const torch::Device kCpu(torch::kCPU);
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using test_support::Problem;
using test_support::train_step;

// Whether scaler.update(value) compiles for a value of type T.
template <typename T>
concept UpdatableWith = requires(amp::GradScaler& s, T v) { s.update(v); };

// Records the ATen ops this thread dispatches while it lives (a RecordFunction callback): the op's name
// and, for a tensor-list first argument, the dtypes in it. Seen from outside the library.
class OpRecorder {
 public:
  struct Call {
    std::string name;
    std::vector<std::string> list_dtypes;  // dtype names (doctest prints strings, not c10 enums)
  };
  OpRecorder() {
    calls_.clear();
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpRecorder::on_start).needsInputs(true));
  }
  ~OpRecorder() { at::removeCallback(handle_); }
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;
  int64_t count(const std::string& name) const {
    return std::count_if(calls_.begin(), calls_.end(), [&](const Call& c) { return c.name == name; });
  }
  std::vector<Call> calls(const std::string& name) const {
    std::vector<Call> out;
    for (const auto& c : calls_)
      if (c.name == name) out.push_back(c);
    return out;
  }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    Call call{fn.name(), {}};
    const auto inputs = fn.inputs();
    if (!inputs.empty() && inputs[0].isTensorList())
      for (const auto& t : inputs[0].toTensorList())
        call.list_dtypes.push_back(dtype_name(static_cast<torch::Tensor>(t).scalar_type()));
    calls_.push_back(std::move(call));
    return nullptr;
  }
  static inline thread_local std::vector<Call> calls_;
  at::CallbackHandle handle_;
};

}  // namespace

TEST_CASE("the scale grows by growth_factor after growth_interval clean steps") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 4.0, .growth_interval = 3});
  CHECK(scaler.get_scale() == 4.0);
  CHECK(train_step(p, scaler));
  CHECK(train_step(p, scaler));
  CHECK(scaler.get_scale() == 4.0);
  CHECK(scaler.state_dict().growth_tracker == 2);
  CHECK(train_step(p, scaler));
  CHECK(scaler.get_scale() == 8.0);
  CHECK(scaler.state_dict().growth_tracker == 0);
}

TEST_CASE("an inf gradient skips the step, backs off the scale and resets the tracker") {
  for (float poison : {kInf, -kInf, kNaN}) {
    CAPTURE(poison);
    Problem p;
    amp::GradScaler scaler(kCpu, {.init_scale = 1024.0, .growth_interval = 100});
    REQUIRE(train_step(p, scaler));
    const auto before = p.flat_params().clone();
    CHECK_FALSE(train_step(p, scaler, poison));
    CHECK(torch::equal(p.flat_params(), before));
    CHECK(scaler.get_scale() == 512.0);
    CHECK(scaler.state_dict().growth_tracker == 0);
  }
}

TEST_CASE("unscaled gradients equal the unscaled run exactly when the scale is a power of two") {
  for (double s : {1.0, 256.0, 65536.0, std::ldexp(1.0, 40)}) {
    CAPTURE(s);
    Problem plain, scaled;
    plain.loss().backward();
    amp::GradScaler scaler(kCpu, {.init_scale = s});
    scaler.scale(scaled.loss()).backward();
    scaler.unscale_(scaled.opt);
    auto pp = plain.model->parameters(), sp = scaled.model->parameters();
    for (size_t i = 0; i < pp.size(); ++i) CHECK(torch::equal(pp[i].grad(), sp[i].grad()));
  }
}

TEST_CASE("scale() multiplies one tensor or a list of tensors by the current scale") {
  amp::GradScaler scaler(kCpu, {.init_scale = 8.0});
  CHECK(scaler.scale(torch::tensor(1.5f)).item<float>() == 12.0f);
  auto outs = scaler.scale(std::vector<torch::Tensor>{torch::tensor(1.0f), torch::tensor(-2.0f)});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].item<float>() == 8.0f);
  CHECK(outs[1].item<float>() == -16.0f);
}

// A reducer standing for another rank that saw an inf: it raises every flag it is given.
struct InfElsewhere : amp::FoundInfReducer {
  int calls = 0;
  void all_reduce(std::vector<std::pair<torch::Device, torch::Tensor>>& found_inf_per_device,
                  torch::Device) override {
    ++calls;
    for (auto& [device, flag] : found_inf_per_device) flag.fill_(1.0);
  }
};

TEST_CASE("found_inf_reducer, and the deprecated process_group, make every rank skip on another rank's inf") {
  auto reducer = std::make_shared<InfElsewhere>();
  {
    Problem p;
    amp::GradScaler scaler(kCpu, {.init_scale = 1024.0, .found_inf_reducer = reducer});
    CHECK(scaler.found_inf_reducer() == reducer);
    CHECK_FALSE(train_step(p, scaler));  // this rank's gradients are finite: the reducer's verdict decides
    CHECK(reducer->calls == 1);
    CHECK(scaler.get_scale() == 512.0);
    CHECK(scaler.clone().found_inf_reducer() == reducer);  // a copy still decides with the other ranks
  }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  amp::GradScalerOptions old_name;
  old_name.init_scale = 1024.0;
  old_name.process_group = reducer;  // 0.x code: still read in 1.x
  amp::GradScalerOptions both = old_name;
  both.found_inf_reducer = std::make_shared<InfElsewhere>();
#pragma GCC diagnostic pop
  Problem p;
  amp::GradScaler scaler(kCpu, old_name);
  CHECK(scaler.found_inf_reducer() == reducer);
  CHECK_FALSE(train_step(p, scaler));
  CHECK(reducer->calls == 2);
  CHECK_THROWS_WITH_AS(amp::GradScaler(kCpu, both), doctest::Contains("found_inf_reducer and the deprecated"),
                       amp::Error);
}

TEST_CASE("unscale_ twice before update is refused with Python's message") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.unscale_(p.opt);
  CHECK_THROWS_WITH_AS(
      scaler.unscale_(p.opt),
      "amp::GradScaler: unscale_() has already been called on this optimizer since the last update().",
      amp::GradScalerError);
}

TEST_CASE("unscale_ after step is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  CHECK_THROWS_WITH_AS(scaler.unscale_(p.opt), "amp::GradScaler: unscale_() is being called after step().",
                       amp::GradScalerError);
}

TEST_CASE("step twice before update is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  CHECK_THROWS_WITH_AS(scaler.step(p.opt),
                       "amp::GradScaler: step() has already been called since the last update().",
                       amp::GradScalerError);
}

TEST_CASE("update with no inf checks recorded is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss()).backward();
  CHECK_THROWS_WITH_AS(scaler.update(), "amp::GradScaler: No inf checks were recorded prior to update.",
                       amp::GradScalerError);
}

TEST_CASE("step, unscale_ and update before any scale() are refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  p.loss().backward();
  CHECK_THROWS_WITH_AS(scaler.step(p.opt), doctest::Contains("Attempted step but _scale is None"),
                       amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.unscale_(p.opt), doctest::Contains("Attempted unscale_"), amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(), doctest::Contains("Attempted update"), amp::GradScalerError);
}

TEST_CASE("step on an optimizer without gradients is refused") {
  Problem p;
  amp::GradScaler scaler(kCpu);
  scaler.scale(p.loss());  // no backward: no grads
  CHECK_THROWS_WITH_AS(scaler.step(p.opt), "amp::GradScaler: No inf checks were recorded for this optimizer.",
                       amp::GradScalerError);
}

TEST_CASE("fp16 gradients are refused: the parameters must be fp32 master weights") {
  auto w = torch::ones({3}, torch::kHalf).requires_grad_();
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(kCpu);
  scaler.scale((w * 2).sum()).backward();
  REQUIRE(dtype_of(w.grad()) == dtype_name(torch::kHalf));
  CHECK_THROWS_WITH_AS(scaler.unscale_(opt), "amp::GradScaler: Attempting to unscale FP16 gradients.",
                       amp::GradScalerError);
}

TEST_CASE("growth and backoff factors are validated like Python's") {
  CHECK_THROWS_WITH_AS(amp::GradScaler(kCpu, {.growth_factor = 1.0}),
                       "amp::GradScaler: The growth factor must be > 1.0.", amp::GradScalerError);
  CHECK_THROWS_WITH_AS(amp::GradScaler(kCpu, {.backoff_factor = 1.0}),
                       "amp::GradScaler: The backoff factor must be < 1.0.", amp::GradScalerError);
  CHECK_NOTHROW(amp::GradScaler(kCpu, {.growth_factor = 1.0, .enabled = false}));
}

TEST_CASE("a state_dict round-trip mid-run continues identically") {
  auto run = [](bool interrupt) {
    Problem p;
    auto scaler = std::make_unique<amp::GradScaler>(
        kCpu, amp::GradScalerOptions{.init_scale = 64.0, .growth_interval = 2});
    std::vector<double> scales;
    for (int step = 0; step < 10; ++step) {
      if (interrupt && step == 5) {
        const amp::GradScalerState state = scaler->state_dict();
        scaler = std::make_unique<amp::GradScaler>(kCpu);  // fresh defaults, then the saved state
        scaler->load_state_dict(state);
      }
      train_step(p, *scaler, step == 3 ? kInf : 0.0f);
      scales.push_back(scaler->get_scale());
    }
    return std::make_pair(scales, p.flat_params());
  };
  const auto [scales_a, params_a] = run(false);
  const auto [scales_b, params_b] = run(true);
  CHECK(scales_a == scales_b);
  CHECK(torch::equal(params_a, params_b));
  CHECK(scales_a.back() != 64.0);  // the run did change the scale, so the round-trip carried something
}

TEST_CASE("load_state_dict refuses the empty state of a disabled scaler") {
  amp::GradScaler disabled(kCpu, {.enabled = false});
  amp::GradScaler enabled(kCpu);
  CHECK(disabled.state_dict().empty);
  CHECK_THROWS_WITH_AS(enabled.load_state_dict(disabled.state_dict()),
                       doctest::Contains("The source state dict is empty"), amp::GradScalerError);
}

TEST_CASE("a disabled scaler is a passthrough") {
  Problem p, ref;
  amp::GradScaler scaler(kCpu, {.enabled = false});
  auto loss = p.loss();
  CHECK(scaler.scale(loss).is_same(loss));
  loss.backward();
  CHECK(scaler.step(p.opt));
  scaler.update();
  ref.loss().backward();
  ref.opt.step();
  CHECK(torch::equal(p.flat_params(), ref.flat_params()));
  CHECK(scaler.get_scale() == 1.0);
  CHECK_FALSE(scaler.is_enabled());
  CHECK(scaler.host_syncs() == 0);
}

TEST_CASE("two optimizers share one update, and each skips on its own") {
  Problem p1(1), p2(2);
  amp::GradScaler scaler(kCpu, {.init_scale = 128.0, .growth_interval = 1});
  const auto before1 = p1.flat_params().clone(), before2 = p2.flat_params().clone();
  p1.opt.zero_grad();
  p2.opt.zero_grad();
  auto losses = scaler.scale(std::vector<torch::Tensor>{p1.loss(), p2.loss()});
  (losses[0] + losses[1]).backward();
  p2.model->parameters()[0].mutable_grad().view(-1)[0] = kInf;
  CHECK(scaler.step(p1.opt));
  CHECK_FALSE(scaler.step(p2.opt));
  scaler.update();
  CHECK_FALSE(torch::equal(p1.flat_params(), before1));
  CHECK(torch::equal(p2.flat_params(), before2));
  CHECK(scaler.get_scale() == 64.0);  // one backoff for the iteration, not one per optimizer
}

TEST_CASE("a training step makes exactly one host sync, in step") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.growth_interval = 2});
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  scaler.unscale_(p.opt);
  CHECK(scaler.host_syncs() == 0);
  scaler.step(p.opt);
  CHECK(scaler.host_syncs() == 1);
  scaler.update();
  CHECK(scaler.host_syncs() == 1);
  for (int i = 0; i < 5; ++i) train_step(p, scaler);
  CHECK(scaler.host_syncs() == 6);
}

TEST_CASE("seen from the dispatcher, scale, unscale_, step and update read one value to the host") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.growth_interval = 2});
  train_step(p, scaler);  // the scale exists: the step below is an ordinary one
  p.opt.zero_grad();
  auto loss = p.loss();
  OpRecorder ops;
  scaler.scale(loss).backward();
  scaler.unscale_(p.opt);
  CHECK(ops.count("aten::_local_scalar_dense") == 0);
  scaler.step(p.opt);
  CHECK(ops.count("aten::_local_scalar_dense") == 1);
  scaler.update();
  CHECK(ops.count("aten::_local_scalar_dense") == 1);
  CHECK(ops.count("aten::_amp_update_scale_") == 1);  // the recorder does see the scaler's ops
}

TEST_CASE("unscale_ makes one fused call per dtype, as Python groups grads by device and dtype") {
  // One optimizer over fp32 and fp64 parameters: the multi-tensor kernels take grads of one dtype only.
  auto w32 = torch::ones({3}).requires_grad_();
  auto w64 = torch::ones({2}, torch::kDouble).requires_grad_();
  auto v32 = torch::ones({4}).requires_grad_();
  torch::optim::SGD opt({w32, w64, v32}, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(kCpu, {.init_scale = 4.0});
  scaler.scale((w32 * 3).sum() + (w64 * 5).sum() + (v32 * 7).sum()).backward();
  OpRecorder ops;
  scaler.unscale_(opt);
  const auto calls = ops.calls("aten::_amp_foreach_non_finite_check_and_unscale_");
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].list_dtypes == std::vector<std::string>{"Float", "Float"});
  CHECK(calls[1].list_dtypes == std::vector<std::string>{"Double"});
  CHECK(torch::equal(w64.grad(), torch::full({2}, 5.0, torch::kDouble)));
  CHECK(torch::equal(v32.grad(), torch::full({4}, 7.0f)));
}

TEST_CASE("the growth and backoff setters change the next update, like Python's") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 10.0, .growth_interval = 1});
  CHECK(scaler.get_growth_factor() == 2.0);
  CHECK(scaler.get_backoff_factor() == 0.5);
  CHECK(scaler.get_growth_interval() == 1);
  scaler.set_growth_factor(3.0);
  train_step(p, scaler);
  CHECK(scaler.get_scale() == 30.0);
  scaler.set_backoff_factor(0.25);
  train_step(p, scaler, kInf);
  CHECK(scaler.get_scale() == 7.5);
  scaler.set_growth_interval(3);
  CHECK(scaler.get_growth_interval() == 3);
  train_step(p, scaler);
  train_step(p, scaler);
  CHECK(scaler.get_scale() == 7.5);
  CHECK(scaler.state_dict().growth_tracker == 2);
  train_step(p, scaler);
  CHECK(scaler.get_scale() == 22.5);
  CHECK(scaler.get_growth_factor() == 3.0);
  CHECK(scaler.get_backoff_factor() == 0.25);
}

TEST_CASE("load_state_dict restores the growth and backoff factors and the interval") {
  Problem p;
  amp::GradScaler source(
      kCpu, {.init_scale = 10.0, .growth_factor = 3.0, .backoff_factor = 0.25, .growth_interval = 1});
  amp::GradScaler target(kCpu);  // defaults: 2.0, 0.5, 2000
  target.load_state_dict(source.state_dict());
  CHECK(target.get_growth_factor() == 3.0);
  CHECK(target.get_backoff_factor() == 0.25);
  CHECK(target.get_growth_interval() == 1);
  train_step(p, target);
  CHECK(target.get_scale() == 30.0);
  train_step(p, target, kInf);
  CHECK(target.get_scale() == 7.5);
}

TEST_CASE("load_state_dict into a scaler in use overwrites its live scale and tracker") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 64.0, .growth_interval = 5});
  for (int i = 0; i < 3; ++i) train_step(p, scaler);
  REQUIRE(scaler.state_dict().growth_tracker == 3);
  amp::GradScalerState state = scaler.state_dict();
  state.scale = 6.0;
  state.growth_tracker = 4;
  scaler.load_state_dict(state);
  CHECK(scaler.get_scale() == 6.0);
  CHECK(scaler.state_dict().growth_tracker == 4);
  train_step(p, scaler);  // the fifth clean step counted from the loaded tracker: growth
  CHECK(scaler.get_scale() == 12.0);
  CHECK(scaler.state_dict().growth_tracker == 0);
}

TEST_CASE("after update(new_scale), as float or tensor, the next iteration steps normally") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 16.0, .growth_interval = 100});
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    p.opt.zero_grad();
    scaler.scale(p.loss()).backward();
    scaler.unscale_(p.opt);
    REQUIRE(scaler.step(p.opt));
    if (i == 0)
      scaler.update(/*new_scale=*/5.0);
    else
      scaler.update(torch::tensor(7.0));
    const auto before = p.flat_params().clone();
    CHECK_NOTHROW(CHECK(train_step(p, scaler)));  // stages were reset: unscale_/step are allowed again
    CHECK_FALSE(torch::equal(p.flat_params(), before));
  }
  CHECK(scaler.get_scale() == 7.0);
}

TEST_CASE("update(new_scale) takes a one-element tensor with Python's checks") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 16.0});
  train_step(p, scaler);
  auto source = torch::tensor(3.5);
  scaler.update(source);
  source.fill_(100.0);  // the scale is a copy: later changes to the argument do not reach it
  CHECK(scaler.get_scale() == 3.5);
  scaler.update(torch::tensor(9.0, torch::kDouble));
  CHECK(scaler.get_scale() == 9.0);
  scaler.update(torch::tensor(int64_t{6}));  // Python's copy_ accepts an integer tensor too
  CHECK(scaler.get_scale() == 6.0);
  const char* reason = "new_scale should be a float or a 1-element torch.cuda.FloatTensor";
  CHECK_THROWS_WITH_AS(scaler.update(torch::tensor({1.0f, 2.0f})), doctest::Contains(reason),
                       amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(torch::tensor(2.0f).requires_grad_()), doctest::Contains(reason),
                       amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(torch::tensor({2.0f})), doctest::Contains(reason), amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(torch::Tensor()), doctest::Contains(reason), amp::GradScalerError);
  CHECK_THROWS_WITH_AS(scaler.update(torch::tensor(2.0f).to(torch::kMeta)), doctest::Contains(reason),
                       amp::GradScalerError);  // another device type
  CHECK(scaler.get_scale() == 6.0);
  // An integer is not a scale (Python: 'int' object has no attribute 'device'): it does not compile.
  static_assert(!UpdatableWith<int> && !UpdatableWith<int64_t> && UpdatableWith<double> &&
                UpdatableWith<torch::Tensor>);
}

TEST_CASE("an optimizer's inf does not carry over into an iteration it does not step in") {
  Problem p1(1), p2(2);
  amp::GradScaler scaler(kCpu, {.init_scale = 128.0, .growth_interval = 1});
  p1.opt.zero_grad();
  p2.opt.zero_grad();
  auto losses = scaler.scale(std::vector<torch::Tensor>{p1.loss(), p2.loss()});
  (losses[0] + losses[1]).backward();
  p2.model->parameters()[0].mutable_grad().view(-1)[0] = kInf;
  scaler.step(p1.opt);
  scaler.step(p2.opt);
  scaler.update();
  REQUIRE(scaler.get_scale() == 64.0);
  CHECK(train_step(p1, scaler));  // only p1 this time, and clean: growth, not a second backoff
  CHECK(scaler.get_scale() == 128.0);
}

TEST_CASE("clone() gives an independent scaler and is refused mid-iteration, like Python's deepcopy") {
  Problem p;
  amp::GradScaler a(kCpu, {.init_scale = 32.0, .growth_factor = 3.0, .growth_interval = 2});
  for (int i = 0; i < 3; ++i) train_step(p, a);
  REQUIRE(a.get_scale() == 96.0);
  amp::GradScaler b = a.clone();
  CHECK(b.get_scale() == 96.0);
  CHECK(b.state_dict().growth_tracker == 1);
  CHECK(b.get_growth_factor() == 3.0);
  CHECK(b.get_growth_interval() == 2);
  p.opt.zero_grad();
  a.scale(p.loss()).backward();
  a.step(p.opt);
  CHECK_THROWS_WITH_AS(a.clone(), doctest::Contains("may only be pickled at the beginning of an iteration"),
                       amp::GradScalerError);
  a.update(/*new_scale=*/2.0);
  CHECK(a.get_scale() == 2.0);
  CHECK(b.get_scale() == 96.0);  // the copy holds its own scale
  CHECK(b.state_dict().growth_tracker == 1);
  Problem q;
  CHECK(train_step(q, b));  // and its own per-optimizer state: usable at once
  CHECK(b.get_scale() == 288.0);
  static_assert(!std::is_copy_constructible_v<amp::GradScaler> &&
                std::is_move_constructible_v<amp::GradScaler>);
}

TEST_CASE("a moved scaler carries on where the original was") {
  Problem p;
  amp::GradScaler a(kCpu, {.init_scale = 8.0, .growth_interval = 2});
  train_step(p, a);
  amp::GradScaler b = std::move(a);
  CHECK(train_step(p, b));
  CHECK(b.get_scale() == 16.0);
}

TEST_CASE("update(new_scale) sets the scale and leaves the tracker alone") {
  Problem p;
  amp::GradScaler scaler(kCpu, {.init_scale = 16.0, .growth_interval = 10});
  train_step(p, scaler);
  p.opt.zero_grad();
  scaler.scale(p.loss()).backward();
  scaler.step(p.opt);
  scaler.update(/*new_scale=*/3.0);
  CHECK(scaler.get_scale() == 3.0);
  CHECK(scaler.state_dict().growth_tracker == 1);
}

TEST_CASE(
    "step(o0), update(), step(o1), update() in one iteration is accepted, and after a back-off optimizer 1 "
    "applies gradients 2.0x too large") {
  // Python accepts this pattern (update() refuses only when no unscale_/step came since the last one):
  // the scale backs off between the two steps, so optimizer 1's gradients, scaled by the old scale, are
  // unscaled by the new one. Measured against the one-update pattern from the same weights and data.
  auto applied_grads = [](bool update_between) {
    Problem p0(1), p1(2);
    amp::GradScaler scaler(kCpu, {.init_scale = 1024.0, .growth_interval = 100});
    p0.opt.zero_grad();
    p1.opt.zero_grad();
    auto losses = scaler.scale(std::vector<torch::Tensor>{p0.loss(), p1.loss()});
    (losses[0] + losses[1]).backward();
    p0.model->parameters()[0].mutable_grad().view(-1)[0] = kInf;
    const bool stepped0 = scaler.step(p0.opt);
    if (update_between) scaler.update();
    const double scale_between = scaler.get_scale();
    const bool stepped1 = scaler.step(p1.opt);
    scaler.update();
    std::vector<torch::Tensor> grads;
    for (const auto& w : p1.model->parameters()) grads.push_back(w.grad().flatten());
    return std::make_tuple(stepped0, stepped1, scale_between, scaler.get_scale(), torch::cat(grads));
  };
  const auto [once_stepped0, once_stepped1, once_between, once_scale, once_grads] = applied_grads(false);
  const auto [twice_stepped0, twice_stepped1, twice_between, twice_scale, twice_grads] = applied_grads(true);
  REQUIRE_FALSE(once_stepped0);
  REQUIRE(once_stepped1);
  CHECK(once_between == 1024.0);  // one update per iteration: the scale stays put until the end
  CHECK(once_scale == 512.0);
  CHECK_FALSE(twice_stepped0);
  CHECK(twice_stepped1);          // no error, and optimizer 1 steps
  CHECK(twice_between == 512.0);  // backed off before optimizer 1 was unscaled
  CHECK(twice_scale == 512.0);    // optimizer 1's clean step does not back off again
  REQUIRE(torch::all(once_grads != 0).item<bool>());
  const torch::Tensor ratio = twice_grads / once_grads;
  CHECK(ratio.min().item<double>() == doctest::Approx(2.0));  // 1024 / 512: every gradient 2.0x too large
  CHECK(ratio.max().item<double>() == doctest::Approx(2.0));
}

TEST_CASE("with two update() calls per iteration the growth tracker counts two clean steps per iteration") {
  Problem p0(1), p1(2);
  amp::GradScaler scaler(kCpu, {.init_scale = 1024.0, .growth_interval = 4});
  for (int iteration = 1; iteration <= 2; ++iteration) {
    CAPTURE(iteration);
    p0.opt.zero_grad();
    p1.opt.zero_grad();
    auto losses = scaler.scale(std::vector<torch::Tensor>{p0.loss(), p1.loss()});
    (losses[0] + losses[1]).backward();
    REQUIRE(scaler.step(p0.opt));
    scaler.update();
    REQUIRE(scaler.step(p1.opt));
    scaler.update();
    if (iteration == 1) CHECK(scaler.state_dict().growth_tracker == 2);
  }
  // growth_interval 4 is reached after two iterations, not four: the scale grew and the tracker restarted.
  CHECK(scaler.get_scale() == 2048.0);
  CHECK(scaler.state_dict().growth_tracker == 0);
  CHECK_THROWS_WITH_AS(scaler.update(), "amp::GradScaler: No inf checks were recorded prior to update.",
                       amp::GradScalerError);
}

}  // namespace test_grad_scaler
