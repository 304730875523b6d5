// Counts, while it lives, the ops of this thread that read a tensor's value back to the host (.item(), a
// nonzero, a scalar read): on CUDA each is a sync with the device. For the tests of "reads nothing back".
#pragma once

#include <memory>
#include <string>

#include <ATen/record_function.h>

namespace test_support {

class HostReadCounter {
 public:
  HostReadCounter() {
    count_ = 0;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&HostReadCounter::on_start));
  }
  ~HostReadCounter() { at::removeCallback(handle_); }
  HostReadCounter(const HostReadCounter&) = delete;
  HostReadCounter& operator=(const HostReadCounter&) = delete;
  int count() const { return count_; }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    const std::string name = fn.name();
    if (name == "aten::_local_scalar_dense" || name == "aten::nonzero" || name == "aten::item") ++count_;
    return nullptr;
  }
  static inline thread_local int count_ = 0;
  at::CallbackHandle handle_;
};

}  // namespace test_support
