#include "amp/nonfinite.h"

#include <atomic>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/graph_task.h>

namespace amp {

struct NonfiniteWatch::State {
  std::size_t max_recorded;
  uint64_t generation;
  std::atomic<int64_t> ops_seen{0};
  mutable std::mutex mutex;  // the autograd engine's device threads run callbacks too
  std::vector<NonfiniteOp> producers;
  std::unordered_map<int64_t, std::string> forward_by_sequence_nr;  // autograd sequence number -> op
};

namespace {
namespace nonfinite_detail {  // named: the library is a unity build

// The one live watch: callbacks are plain function pointers, so they find their watch here.
std::atomic<NonfiniteWatch::State*> g_active{nullptr};
std::atomic<uint64_t> g_generation{0};

// One watched op between its start and end callbacks.
struct Frame : at::ObserverContext {
  std::string name;
  int64_t sequence = 0;
  int64_t autograd_nr = -1;  // the autograd sequence number (a node's, or the forward op's it will make)
  uint64_t generation = 0;
  bool backward_node = false;
  bool inputs_finite = true;
  bool child_produced = false;  // an op nested inside it was a producer
  std::string inputs;
  Frame* parent = nullptr;
};

// The open frames of this thread, innermost last.
thread_local Frame* t_top = nullptr;

bool checkable(const at::Tensor& t) {
  return t.defined() && t.layout() == at::kStrided && !t.is_nested() && !t.is_meta() && t.numel() > 0 &&
         (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()));
}

// Calls f on every tensor of the IValue (a tensor, a list of tensors or of optional tensors).
template <class F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) f(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef())
      if (e.isTensor()) f(e.toTensor());
  }
}

bool all_finite(const at::Tensor& t) {
  return at::isfinite(t).all().item<bool>();
}

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << c10::toString(t.scalar_type()) << t.sizes();
  return s.str();
}

bool unchecked_output(std::string_view name) {
  return name.rfind("aten::empty", 0) == 0 || name.rfind("aten::new_empty", 0) == 0;
}

// Whether argument i is one the op overwrites without reading: an out= argument (keyword-only and written),
// or the destination of copy_, fill_, zero_. Its old contents (often uninitialised memory) do not count.
bool only_written(std::string_view name, const c10::FunctionSchema& schema, std::size_t i) {
  const auto& args = schema.arguments();
  if (i >= args.size() || !args[i].alias_info() || !args[i].alias_info()->isWrite()) return false;
  if (args[i].kwarg_only()) return true;
  return i == 0 && (name == "aten::copy_" || name == "aten::fill_" || name == "aten::zero_");
}

std::string enclosing(const Frame* f) {
  std::string s;
  for (const Frame* p = f->parent; p; p = p->parent) s = p->name + (s.empty() ? "" : " > " + s);
  return s;
}

bool in_backward(const Frame* f) {
  if (torch::autograd::get_current_graph_task_id() != -1) return true;
  for (const Frame* p = f; p; p = p->parent)
    if (p->backward_node) return true;
  return false;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  NonfiniteWatch::State* state = g_active.load();
  if (!state) return nullptr;
  at::RecordFunctionGuard off(false);  // the checks below are not watched
  c10::AutoGradMode no_grad(false);
  auto frame = std::make_unique<Frame>();
  frame->name = fn.name();
  frame->sequence = state->ops_seen.fetch_add(1);
  frame->generation = state->generation;
  frame->backward_node = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
  frame->autograd_nr = fn.seqNr();
  // A frame left by an earlier watch (none should be) is not a parent.
  frame->parent = (t_top && t_top->generation == state->generation) ? t_top : nullptr;
  const auto schema = fn.operator_schema();
  const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const bool read = !(schema && only_written(frame->name, *schema, i));
    for_each_tensor(inputs[i], [&](const at::Tensor& t) {
      if (!t.defined()) return;
      frame->inputs += (frame->inputs.empty() ? "" : ", ") + describe(t);
      if (read && checkable(t) && frame->inputs_finite && !all_finite(t)) frame->inputs_finite = false;
    });
  }
  if (!frame->backward_node && fn.seqNr() >= 0) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->forward_by_sequence_nr[fn.seqNr()] = frame->name;
  }
  t_top = frame.get();
  return frame;
}

// The first non-finite output of the op, or nullopt.
std::optional<NonfiniteOp> nonfinite_output(const at::RecordFunction& fn, const Frame& frame) {
  if (unchecked_output(frame.name)) return std::nullopt;
  std::optional<NonfiniteOp> found;
  for (const c10::IValue& v : fn.outputs()) {
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (found || !checkable(t) || all_finite(t)) return;
      found = NonfiniteOp{};
      found->dtype = t.scalar_type();
      found->has_inf = at::isinf(t).any().item<bool>();
      found->has_nan = at::isnan(t).any().item<bool>();
    });
  }
  return found;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* frame = static_cast<Frame*>(ctx);
  if (!frame) return;
  if (t_top == frame) t_top = frame->parent;
  NonfiniteWatch::State* state = g_active.load();
  if (!state || state->generation != frame->generation) return;
  at::RecordFunctionGuard off(false);
  c10::AutoGradMode no_grad(false);
  if (frame->child_produced) {  // the value came out of a nested op: it flows through this one
    if (frame->parent) frame->parent->child_produced = true;
    return;
  }
  if (!frame->inputs_finite || frame->backward_node) return;
  std::optional<NonfiniteOp> op = nonfinite_output(fn, *frame);
  if (!op) return;
  if (frame->parent) frame->parent->child_produced = true;
  op->op = frame->name;
  op->sequence = frame->sequence;
  op->inputs = frame->inputs;
  op->within = enclosing(frame);
  op->phase = in_backward(frame) ? "backward" : "forward";
  std::lock_guard<std::mutex> lock(state->mutex);
  if (op->phase == "backward") {
    for (const Frame* p = frame->parent; p; p = p->parent) {
      if (!p->backward_node) continue;
      auto it = state->forward_by_sequence_nr.find(p->autograd_nr);
      if (it != state->forward_by_sequence_nr.end()) op->forward_op = it->second;
      break;
    }
  }
  if (state->producers.size() < state->max_recorded) state->producers.push_back(std::move(*op));
}

}  // namespace nonfinite_detail
}  // namespace

NonfiniteWatch::NonfiniteWatch(std::size_t max_recorded) : state_(std::make_unique<State>()) {
  state_->max_recorded = max_recorded == 0 ? 1 : max_recorded;
  state_->generation = ++nonfinite_detail::g_generation;
  State* expected = nullptr;
  if (!nonfinite_detail::g_active.compare_exchange_strong(expected, state_.get()))
    throw NonfiniteWatchError("NonfiniteWatch", "another watch is alive; watches do not nest");
  at::RecordFunctionCallback cb(&nonfinite_detail::on_start, &nonfinite_detail::on_end);
  cb.needsInputs(true).needsOutputs(true).scopes(
      {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION});
  handle_ = at::addThreadLocalCallback(std::move(cb));
}

NonfiniteWatch::~NonfiniteWatch() {
  at::removeCallback(handle_);
  nonfinite_detail::g_active.store(nullptr);
}

std::optional<NonfiniteOp> NonfiniteWatch::first() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->producers.empty()) return std::nullopt;
  return state_->producers.front();
}

std::vector<NonfiniteOp> NonfiniteWatch::producers() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->producers;
}

int64_t NonfiniteWatch::ops_seen() const {
  return state_->ops_seen.load();
}

}  // namespace amp
