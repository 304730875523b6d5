// amp::Autocast: the RAII form of torch.autocast, checked op by op on the CPU.
#include <doctest/doctest.h>

#include <stdexcept>

#include <ATen/autocast_mode.h>

#include "amp/autocast.h"
#include "amp/device_caps.h"
#include "doctest_torch.h"
#include "lab/libtorch.h"

namespace test_autocast {

namespace {

using torch::kCPU;

struct AutocastState {
  bool enabled;
  torch::ScalarType dtype;
  bool cache;
  bool operator==(const AutocastState&) const = default;
};

// For doctest's failure messages.
std::ostream& operator<<(std::ostream& os, const AutocastState& s) {
  return os << "{enabled " << s.enabled << ", " << c10::toString(s.dtype) << ", cache " << s.cache << "}";
}

AutocastState cpu_state() {
  return {at::autocast::is_autocast_enabled(at::kCPU), at::autocast::get_autocast_dtype(at::kCPU),
          at::autocast::is_autocast_cache_enabled()};
}

}  // namespace

TEST_CASE("the autocast state is restored after nested regions") {
  const AutocastState before = cpu_state();
  REQUIRE_FALSE(before.enabled);
  {
    amp::Autocast outer(kCPU, torch::kBFloat16);
    CHECK(cpu_state() == AutocastState{true, torch::kBFloat16, before.cache});
    {
      amp::Autocast inner(kCPU, torch::kHalf, /*enabled=*/true, /*cache_enabled=*/false);
      CHECK(cpu_state() == AutocastState{true, torch::kHalf, false});
      {
        amp::Autocast off(kCPU, std::nullopt, /*enabled=*/false);
        CHECK_FALSE(amp::is_autocast_enabled(at::kCPU));
        CHECK(dtype_name(off.dtype()) ==
              dtype_name(torch::kHalf));  // nullopt takes the current dtype, as Python does
      }
      CHECK(cpu_state() == AutocastState{true, torch::kHalf, false});
    }
    CHECK(cpu_state() == AutocastState{true, torch::kBFloat16, before.cache});
  }
  CHECK(cpu_state() == before);
}

TEST_CASE("the autocast state is restored when an exception leaves the region") {
  const AutocastState before = cpu_state();
  try {
    amp::Autocast ac(kCPU, torch::kHalf, /*enabled=*/true, /*cache_enabled=*/false);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(cpu_state() == before);
  // The nesting count is back at zero: one more region enters at depth 1.
  CHECK(at::autocast::increment_nesting() == 1);
  CHECK(at::autocast::decrement_nesting() == 0);
}

TEST_CASE("ops under autocast on the CPU follow the documented policy, for bf16 and fp16") {
  for (auto low : {torch::kBFloat16, torch::kHalf}) {
    CAPTURE(low);
    auto a = torch::randn({8, 8});
    auto b = torch::randn({8, 8});
    amp::Autocast ac(kCPU, low);
    CHECK(dtype_of(torch::mm(a, b)) == dtype_name(low));
    CHECK(dtype_of(torch::matmul(a, b)) == dtype_name(low));
    CHECK(dtype_of(torch::softmax(a, /*dim=*/1)) == dtype_name(torch::kFloat));
    CHECK(dtype_of(torch::mse_loss(a, b)) == dtype_name(torch::kFloat));
    CHECK(dtype_of(torch::mse_loss(a.to(low), b.to(low))) == dtype_name(torch::kFloat));  // fp32 list upcasts
    CHECK(dtype_of(a.sum()) == dtype_name(torch::kFloat));
    CHECK(dtype_of((a.to(torch::kHalf) + b)) == dtype_name(torch::kFloat));  // ordinary type promotion
    CHECK(dtype_of(torch::mm(a.to(torch::kDouble), b.to(torch::kDouble))) == dtype_name(torch::kDouble));
  }
}

TEST_CASE("parameters stay float32 while the forward pass runs in 16-bit") {
  torch::nn::Linear layer(4, 3);
  amp::Autocast ac(kCPU, torch::kBFloat16);
  auto y = layer->forward(torch::randn({2, 4}));
  CHECK(dtype_of(y) == dtype_name(torch::kBFloat16));
  CHECK(dtype_of(layer->weight) == dtype_name(torch::kFloat));
  CHECK(dtype_of(layer->bias) == dtype_name(torch::kFloat));
}

TEST_CASE("the cast cache lives until the outermost region ends") {
  // The cache keeps the bf16 copy of a leaf weight; an in-place update is not seen until it is cleared.
  auto x = torch::ones({1, 4});
  auto w = torch::ones({4, 1}).requires_grad_();
  torch::Tensor stale, fresh;
  {
    amp::Autocast outer(kCPU, torch::kBFloat16);
    {
      amp::Autocast inner(kCPU, torch::kBFloat16);
      CHECK(torch::mm(x, w).item<float>() == 4.0f);
      torch::NoGradGuard no_grad;
      w.mul_(2);
    }
    stale = torch::mm(x, w);  // inner exit (depth 1) kept the cache
  }
  {
    amp::Autocast again(kCPU, torch::kBFloat16);
    fresh = torch::mm(x, w);  // outermost exit cleared it
  }
  CHECK(stale.item<float>() == 4.0f);
  CHECK(fresh.item<float>() == 8.0f);
}

TEST_CASE("a dtype other than fp16 or bf16 is refused, unless autocast is disabled") {
  CHECK_THROWS_AS(amp::Autocast(kCPU, torch::kFloat), amp::AutocastError);
  CHECK_THROWS_WITH_AS(amp::Autocast(kCPU, torch::kDouble), doctest::Contains("must be float16 or bfloat16"),
                       amp::AutocastError);
  CHECK_NOTHROW(amp::Autocast(kCPU, torch::kFloat, /*enabled=*/false));
  CHECK_FALSE(amp::is_autocast_enabled(at::kCPU));
}

TEST_CASE("the default lower-precision dtype is bf16 on the CPU") {
  amp::Autocast ac(kCPU);
  CHECK(dtype_name(ac.dtype()) == dtype_name(torch::kBFloat16));
  CHECK(dtype_of(torch::mm(torch::randn({2, 2}), torch::randn({2, 2}))) == dtype_name(torch::kBFloat16));
}

// One test for both kinds of machine: each branch asserts what must hold there.
TEST_CASE("CUDA autocast is refused without a GPU, and defaults to fp16 mm with one") {
  if (!amp::cuda_available()) {
    CHECK_THROWS_WITH_AS(amp::Autocast(torch::kCUDA), doctest::Contains("no CUDA device"),
                         amp::AutocastError);
    CHECK_FALSE(amp::is_autocast_enabled(at::kCUDA));
    return;
  }
  auto a = torch::randn({8, 8}, torch::kCUDA);
  amp::Autocast ac(torch::kCUDA);
  CHECK(dtype_name(ac.dtype()) == dtype_name(torch::kHalf));
  CHECK(dtype_of(torch::mm(a, a)) == dtype_name(torch::kHalf));
  CHECK(dtype_of(torch::softmax(a, /*dim=*/1)) == dtype_name(torch::kFloat));
}

TEST_CASE("CUDA requests follow Python's checks: float32 accepted, bf16 only where is_bf16_supported()") {
  const amp::AutocastDeviceCaps ampere{.cuda_available = true, .cuda_bf16 = true};
  const amp::AutocastDeviceCaps no_bf16{.cuda_available = true, .cuda_bf16 = false};
  const amp::AutocastDeviceCaps no_gpu{.cuda_available = false, .cuda_bf16 = false};
  for (auto dtype : {torch::kHalf, torch::kBFloat16, torch::kFloat}) {
    CAPTURE(dtype);
    CHECK_NOTHROW(amp::check_autocast_request(torch::kCUDA, dtype, ampere));
  }
  CHECK_NOTHROW(amp::check_autocast_request(torch::kCUDA, torch::kFloat, no_bf16));
  CHECK_NOTHROW(amp::check_autocast_request(torch::kCUDA, torch::kHalf, no_bf16));
  CHECK_THROWS_WITH_AS(
      amp::check_autocast_request(torch::kCUDA, torch::kBFloat16, no_bf16),
      "amp::Autocast: Current CUDA Device does not support bfloat16. Please switch dtype to float16.",
      amp::AutocastError);
  // What Python warns about and disables, refused here: no GPU, a CPU dtype outside fp16/bf16.
  CHECK_THROWS_WITH_AS(amp::check_autocast_request(torch::kCUDA, torch::kHalf, no_gpu),
                       doctest::Contains("no CUDA device"), amp::AutocastError);
  CHECK_THROWS_AS(amp::check_autocast_request(torch::kCPU, torch::kFloat, ampere), amp::AutocastError);
  CHECK_THROWS_AS(amp::check_autocast_request(torch::kCUDA, torch::kInt, ampere), amp::AutocastError);
  CHECK_THROWS_AS(amp::check_autocast_request(torch::kMeta, torch::kHalf, ampere), amp::AutocastError);
}

TEST_CASE("bf16 support follows torch.cuda.is_bf16_supported(): native from sm_80, emulation counts below") {
  int probes = 0;
  auto creatable = [&] { return ++probes, true; };
  auto not_creatable = [&] { return ++probes, false; };
  CHECK(amp::bf16_supported_rule(/*cuda_available=*/true, /*compute_capability=*/90, creatable));
  CHECK(amp::bf16_supported_rule(true, 80, not_creatable));
  CHECK(probes == 0);  // from 8.0 the tensor probe is not needed, as in Python
  CHECK(amp::bf16_supported_rule(true, 75, creatable));  // Turing: emulated bf16 counts
  CHECK_FALSE(amp::bf16_supported_rule(true, 70, not_creatable));
  CHECK_FALSE(amp::bf16_supported_rule(true, 75, creatable, /*including_emulation=*/false));
  CHECK_FALSE(amp::bf16_supported_rule(/*cuda_available=*/false, 90, creatable));
  CHECK(probes == 2);
  // This machine: without CUDA there is no bf16 on CUDA, native or not.
  if (!amp::cuda_available()) {
    CHECK_FALSE(amp::cuda_supports_bf16());
    CHECK_FALSE(amp::cuda_supports_bf16_natively());
  } else if (amp::cuda_supports_bf16_natively()) {
    CHECK(amp::cuda_supports_bf16());  // native implies supported
  }
}

}  // namespace test_autocast
