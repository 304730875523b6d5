#include "amp/bf16_update.h"

#include <sstream>
#include <string>

#include <torch/types.h>
#include <torch/utils.h>

namespace amp {
namespace {

constexpr int64_t kLow16 = int64_t{1} << 16;  // the random integer is uniform in [0, 2^16)
constexpr int32_t kHigh16Mask = -65536;       // 0xFFFF0000 as an int32: the bits bf16 keeps

[[noreturn]] void refuse(const char* fn, const std::string& what) {
  throw Bf16UpdateError(fn, what);
}

void require_dtype(const char* fn, const char* name, const torch::Tensor& t, torch::ScalarType want) {
  if (!t.defined()) refuse(fn, std::string(name) + " is an undefined tensor");
  if (t.scalar_type() != want) {
    std::ostringstream msg;
    msg << name << " must be " << (want == torch::kBFloat16 ? "bf16" : "fp32") << " (" << want << "), got "
        << t.scalar_type();
    refuse(fn, msg.str());
  }
}

void require_alike(const char* fn, const char* name_a, const torch::Tensor& a, const char* name_b,
                   const torch::Tensor& b) {
  std::ostringstream msg;
  if (a.sizes() != b.sizes()) {
    msg << name_a << " and " << name_b << " differ in shape: " << a.sizes() << " and " << b.sizes();
    refuse(fn, msg.str());
  }
  if (a.device() != b.device()) {
    msg << name_a << " is on " << a.device() << ", " << name_b << " on " << b.device()
        << ": both must be on one device";
    refuse(fn, msg.str());
  }
}

void require_generator(const char* fn, const std::optional<at::Generator>& gen, const torch::Device& device) {
  if (!gen) return;
  if (!gen->defined()) refuse(fn, "gen is an undefined generator");
  const torch::Device g = gen->device();
  if (g.type() != device.type() || (g.has_index() && device.has_index() && g.index() != device.index())) {
    std::ostringstream msg;
    msg << "gen is a generator of " << g << ", the tensors are on " << device;
    refuse(fn, msg.str());
  }
}

// src (fp32) rounded stochastically, as fp32 values each exactly representable in bf16 (NaN kept as it
// is). torchao's rule (_fp32_to_bf16_sr, torchao/optim/quant_utils.py), draw for draw: one uniform 16-bit
// integer per element from randint(0, 2^16), and the magnitude is rounded up (a carry into bit 16) when
// that integer is below the low 16 bits, with probability (low 16 bits) / 2^16. The same generator state
// therefore rounds exactly as torchao does. inf and zeros have no low bits (no carry); the largest finite
// pattern plus the carry is inf's pattern, so no int32 addition overflows.
torch::Tensor stochastically_rounded(const torch::Tensor& src, const std::optional<at::Generator>& gen) {
  const torch::Tensor bits = src.view(torch::kInt);  // same element size: any strides
  const torch::Tensor noise = at::randint(0, kLow16, src.sizes(), gen, src.options().dtype(torch::kInt));
  const torch::Tensor toward_zero = bits.bitwise_and(kHigh16Mask);
  const torch::Tensor carry = noise.lt(bits.bitwise_and(kLow16 - 1));
  const torch::Tensor rounded = torch::where(carry, toward_zero + kLow16, toward_zero).view(torch::kFloat);
  return torch::where(torch::isnan(src), src, rounded);
}

}  // namespace

void stochastic_round_(const torch::Tensor& dst, const torch::Tensor& src, std::optional<at::Generator> gen) {
  constexpr const char* fn = "stochastic_round_";
  require_dtype(fn, "dst", dst, torch::kBFloat16);
  require_dtype(fn, "src", src, torch::kFloat);
  require_alike(fn, "dst", dst, "src", src);
  require_generator(fn, gen, src.device());
  torch::NoGradGuard no_grad;
  dst.copy_(stochastically_rounded(src, gen));  // exact: every value is a bf16 value (or NaN)
}

void stochastic_round_add_(const torch::Tensor& weight_bf16, const torch::Tensor& update_fp32,
                           std::optional<at::Generator> gen) {
  constexpr const char* fn = "stochastic_round_add_";
  require_dtype(fn, "weight", weight_bf16, torch::kBFloat16);
  require_dtype(fn, "update", update_fp32, torch::kFloat);
  require_alike(fn, "weight", weight_bf16, "update", update_fp32);
  require_generator(fn, gen, weight_bf16.device());
  torch::NoGradGuard no_grad;
  const torch::Tensor sum = weight_bf16.to(torch::kFloat).add_(update_fp32);
  weight_bf16.copy_(stochastically_rounded(sum, gen));
}

void kahan_add_(const torch::Tensor& weight_bf16, const torch::Tensor& compensation_bf16,
                const torch::Tensor& update) {
  constexpr const char* fn = "kahan_add_";
  require_dtype(fn, "weight", weight_bf16, torch::kBFloat16);
  require_dtype(fn, "compensation", compensation_bf16, torch::kBFloat16);
  require_dtype(fn, "update", update, torch::kFloat);
  require_alike(fn, "weight", weight_bf16, "compensation", compensation_bf16);
  require_alike(fn, "weight", weight_bf16, "update", update);
  if (weight_bf16.is_alias_of(compensation_bf16)) refuse(fn, "compensation shares its memory with weight");
  torch::NoGradGuard no_grad;
  const torch::Tensor w = weight_bf16.to(torch::kFloat);
  const torch::Tensor y = compensation_bf16.to(torch::kFloat).add_(update);  // fp32: update + comp
  const torch::Tensor t = (w + y).to(torch::kBFloat16);                      // rounded to nearest
  compensation_bf16.copy_(y - (t.to(torch::kFloat) - w));                    // what the rounding lost
  weight_bf16.copy_(t);
}

}  // namespace amp
