// amp::CustomFwd / amp::CustomBwd: torch.amp.custom_fwd and torch.amp.custom_bwd
// (torch/amp/autocast_mode.py) for a torch::autograd::Function.
//
// clang-format off
//   struct SumSquares : torch::autograd::Function<SumSquares> {
//     static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x) {
//       // @custom_fwd(cast_inputs=torch.float32):
//       amp::CustomFwd amp_fwd(ctx, torch::kCPU, /*cast_inputs=*/torch::kFloat);
//       x = amp_fwd.cast(x);  // fp32 if autocast was on; autocast is off from here to the return
//       ctx->save_for_backward({x});
//       return (x * x).sum();
//     }
//     static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
//                                                    torch::autograd::variable_list grad) {
//       amp::CustomBwd amp_bwd(ctx, torch::kCPU);  // @custom_bwd: the forward's autocast state
//       auto x = ctx->get_saved_variables()[0];
//       return {grad[0] * 2 * x};
//     }
//   };
// clang-format on
//
// Python's decorators, step for step:
//   custom_fwd records the device's autocast dtype in ctx. With cast_inputs unset it records whether
//   autocast was on and leaves the state alone. With cast_inputs set and autocast on, it casts floating
//   tensor arguments on that device type (not float64) to cast_inputs, runs forward with autocast off
//   and records "autocast off". Outside autocast it does nothing.
//   custom_bwd runs backward inside autocast(device_type, enabled=<recorded>, dtype=<recorded>).
// The record lives in ctx->saved_data under the keys below, so the two guards need no other link.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/csrc/autograd/custom_function.h>

#include "amp/autocast.h"

namespace amp {

// ctx->saved_data keys (Python's ctx._fwd_used_autocast and ctx._dtype).
inline constexpr const char* kFwdUsedAutocastKey = "amp_fwd_used_autocast";
inline constexpr const char* kFwdDtypeKey = "amp_fwd_dtype";

// Construct first thing in forward; it stays in force until forward returns.
class CustomFwd {
 public:
  CustomFwd(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type,
            std::optional<c10::ScalarType> cast_inputs = std::nullopt);

  CustomFwd(const CustomFwd&) = delete;
  CustomFwd& operator=(const CustomFwd&) = delete;

  // An argument as forward should see it: a floating tensor on the device type, other than float64, is
  // cast to cast_inputs when the guard disabled autocast; anything else comes back unchanged.
  at::Tensor cast(const at::Tensor& input) const;
  // Any other argument (an int, a double, a non-tensor object) is passed through as it is. SFINAE rather
  // than a requires clause, so that the header compiles as C++17.
  template <class T, std::enable_if_t<!std::is_convertible_v<T, const at::Tensor&>, int> = 0>
  T&& cast(T&& other) const {
    return std::forward<T>(other);
  }

  // Whether this forward runs with autocast switched off and its inputs cast (autocast was on and
  // cast_inputs was given).
  bool casting() const { return off_.has_value(); }

 private:
  c10::DeviceType device_type_;
  std::optional<c10::ScalarType> cast_inputs_;
  std::optional<Autocast> off_;  // autocast(device_type, enabled=False), while casting
};

// Construct first thing in backward: autocast is as the forward left it until backward returns.
class CustomBwd {
 public:
  CustomBwd(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type);

  CustomBwd(const CustomBwd&) = delete;
  CustomBwd& operator=(const CustomBwd&) = delete;

  bool autocast_enabled() const { return guard_.enabled(); }
  c10::ScalarType dtype() const { return guard_.dtype(); }

 private:
  static Autocast make(torch::autograd::AutogradContext* ctx, c10::DeviceType device_type);
  Autocast guard_;
};

}  // namespace amp
