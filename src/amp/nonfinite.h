// amp::NonfiniteWatch: which ATen op first made an inf or NaN. A debugging tool for the fp16 NaN that no loss
// scale fixes (a forward op whose output overflows fp16, so the GradScaler skips every step):
//
//   {
//     amp::NonfiniteWatch watch;                // every ATen op of this thread is now checked
//     auto loss = loss_fn(model->forward(x), y);
//     loss.backward();
//     if (auto op = watch.first()) std::cout << op->op << " " << op->phase << " " << op->inputs << "\n";
//   }                                           // the callback is removed
//   // or: std::optional<amp::NonfiniteOp> op = amp::find_nonfinite([&] { ...; });
//
// Mechanism: a thread-local at::RecordFunction callback (ATen/record_function.h) with inputs and outputs,
// on the scopes FUNCTION (every dispatched ATen op) and BACKWARD_FUNCTION (every autograd node). The start
// callback checks the op's floating-point (and complex) tensor inputs, the end callback its outputs. An op
// is a *producer* when an output holds an inf or NaN while every checked input was finite and no op nested
// inside it was already a producer: the innermost op that made the value, not the composite ops around it
// (aten::linear around aten::addmm) and not the later ops it flowed through (an add or mul of the inf).
// Ops with no tensor input (aten::full(inf)) count as producers; the outputs of aten::empty*,
// aten::new_empty* (uninitialised memory) are not checked, nor the old contents of an argument the op only
// writes (an out= argument, the destination of copy_, fill_, zero_); an in-place op's self (add_) is an
// input.
//
// Backward: LibTorch runs CPU backward ops on the calling thread, and the autograd engine carries the
// thread-local callbacks into its device threads (ThreadLocalState), so backward ops are watched on CUDA as
// well. An op runs in phase "backward" when it runs inside an autograd graph task (or an autograd node);
// `forward_op` then names the forward op whose node ran it (matched by the autograd sequence number), the
// cheap part of what anomaly mode (torch::autograd::DetectAnomalyGuard) reports.
//
// Cost: every op's inputs and outputs are read, with isfinite().all().item(): on CUDA a device sync per
// tensor per op. It is a debugging tool, not for training runs. It only reads: results are bitwise the same
// with and without it (tested). Ops called by the watch itself are not watched; a tensor it cannot check (no
// isfinite on its backend) counts as finite, so the watch never throws into an op. It keeps one name per op
// that records an autograd node (for forward_op): its memory grows with the ops run under it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>

#include "amp/error.h"

namespace amp {

// A second watch while one is alive (anywhere in the process): watches do not nest.
struct NonfiniteWatchError : Error {
  using Error::Error;
};

// One producing op, as the callback saw it.
struct NonfiniteOp {
  std::string op;        // the operator's name: "aten::exp", "aten::mm"
  int64_t sequence = 0;  // the op's index among the ops this watch saw (0 first, in order of start)
  c10::ScalarType dtype = c10::ScalarType::Undefined;  // the dtype of its first non-finite output
  bool has_inf = false;                                // some output element is +-inf
  bool has_nan = false;                                // some output element is NaN
  std::string phase;                                   // "forward" or "backward"
  std::string inputs;      // its tensor inputs' dtypes and shapes: "Half[4, 8], Half[8, 2]"
  std::string within;      // the watched ops around it, outermost first: "aten::linear", "MulBackward0"
  std::string forward_op;  // backward only: the forward op whose autograd node ran it ("aten::mul"), or ""
};

class NonfiniteWatch {
 public:
  // Starts watching this thread's ATen ops (and the autograd engine's, for a backward started from this
  // thread). Keeps the first `max_recorded` producers (at least 1). Throws NonfiniteWatchError when another
  // watch is alive. No device sync here; every watched op syncs (see above).
  explicit NonfiniteWatch(std::size_t max_recorded = 16);
  // Removes the callback, also when unwinding from an exception. Never throws.
  ~NonfiniteWatch();

  NonfiniteWatch(const NonfiniteWatch&) = delete;
  NonfiniteWatch& operator=(const NonfiniteWatch&) = delete;

  // The first producer, or nullopt when every op's outputs were finite (or only inherited a non-finite
  // input). No device sync.
  std::optional<NonfiniteOp> first() const;
  // Every producer seen, in order, at most max_recorded of them.
  std::vector<NonfiniteOp> producers() const;
  // How many ops the watch saw (ATen ops, autograd nodes and the engine's ranges around them).
  int64_t ops_seen() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
  uint64_t handle_ = 0;
};

// Runs fn() under a NonfiniteWatch and returns its first producer. Throws what fn throws (the watch is
// removed).
template <class Fn>
std::optional<NonfiniteOp> find_nonfinite(Fn&& fn) {
  NonfiniteWatch watch;
  std::forward<Fn>(fn)();
  return watch.first();
}

}  // namespace amp
