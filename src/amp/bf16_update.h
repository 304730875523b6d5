// Updating bf16 weights without an fp32 master copy: stochastic rounding and Kahan compensation, the two
// techniques of Zamirai et al. 2020, "Revisiting BFloat16 Training" (arXiv 2010.06192). A bf16 weight of 1
// has neighbours 1 and 1 + 2^-7, so an update of 1e-4 rounded to nearest is lost every time; rounded
// stochastically it is kept in expectation, and a Kahan compensation buffer carries the lost residue to
// the next step. torchao offers the first as _AdamW(..., bf16_stochastic_round=True) (torchao.optim; its
// _fp32_to_bf16_sr in torchao/optim/quant_utils.py is the same bit trick). The usual step:
//
//   torch::Tensor update = -lr * grad.to(torch::kFloat);           // fp32, the optimizer's own math
//   amp::stochastic_round_add_(weight, update, gen);               // weight is bf16
//   // or, with a bf16 buffer of weight's shape kept beside it (zeros at the start):
//   amp::kahan_add_(weight, compensation, update);
//
// Only torch ops (an int32 view, randint, bitwise and where), so the same code runs on the CPU and on
// CUDA. Nothing here synchronises with the device: no value is read back to the host (on CUDA the kernels
// are queued on the current stream and the functions return). Each function runs under a NoGradGuard, so
// it may update a parameter that requires grad, as an optimizer's step does. Misuse (dtype, shape,
// device) throws Bf16UpdateError before anything is written.
#pragma once

#include <optional>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "amp/error.h"

namespace amp {

// A call these functions refuse, naming the argument and what it was
// ("stochastic_round_: dst must be bf16, got Float").
struct Bf16UpdateError : Error {
  using Error::Error;
};

// dst := src rounded stochastically to bf16: to one of src's two bf16 neighbours, the one further from
// zero with probability (distance from the one nearer zero) / (gap between them), so E[dst] = src. The
// bits below bf16's 16 are compared with a uniform random 16-bit integer drawn by randint(0, 2^16) (int32,
// one per element): the magnitude is rounded up when the integer is below them. That is torchao's
// _fp32_to_bf16_sr draw for draw, so the same generator state rounds bitwise as torchao does.
//   - values exactly representable in bf16 (zeros of either sign, infinities) are copied unchanged;
//   - NaN stays NaN (a bf16 NaN, as x.to(bf16) makes it): the truncation alone would turn a NaN whose
//     payload sits only in the low 16 bits into inf, so NaNs are guarded explicitly (and get no carry);
//   - fp32 subnormals round between bf16 subnormals (same exponent range, the same rule);
//   - above bf16's largest finite value (bits 0x7F7F, 3.3895e38) the upper neighbour is inf: a finite
//     fp32 x there becomes inf with probability (x - 3.3895e38) / 2^120 (the gap to the next bit pattern,
//     inf's), as torchao's rounding does and as round to nearest (x.to(bf16)) does from 3.3962e38 on.
//     It does not saturate at the largest finite value: it overflows, as every bf16 conversion does.
// gen: the random source, a generator of src's device (at::make_generator<at::CPUGeneratorImpl>(seed) on
// the CPU; on any device g = at::globalContext().defaultGenerator(device).clone(), g.set_current_seed(seed));
// the same seeded generator gives the same dst, and it advances by one randint of src's size.
// nullopt draws from the device's default generator (torch::manual_seed).
// Throws Bf16UpdateError when a tensor is undefined, dst is not bf16, src is not fp32, their shapes or
// devices differ, or gen is on another device type. dst may be non-contiguous; it is written in place.
void stochastic_round_(const torch::Tensor& dst, const torch::Tensor& src,
                       std::optional<at::Generator> gen = {});

// weight := stochastic_round(fp32(weight) + update): a bf16-weights optimizer's update with stochastic
// rounding. The sum is exact in fp32 for weights and updates of similar size; small updates then survive
// in expectation. Same rules, errors and syncs as stochastic_round_ (weight bf16, update fp32, same shape
// and device); a temporary fp32 tensor of weight's size is made.
void stochastic_round_add_(const torch::Tensor& weight_bf16, const torch::Tensor& update_fp32,
                           std::optional<at::Generator> gen = {});

// Kahan-compensated weight += update with a bf16 compensation buffer (deterministic, round to nearest):
//   y = update + fp32(comp)              (fp32)
//   t = bf16(fp32(weight) + y)           (round to nearest)
//   comp = bf16(y - (fp32(t) - fp32(weight)))   the part of y the rounding lost, kept for the next step
//   weight = t
// Start comp at zeros of weight's shape (torch::zeros_like(weight)). weight + comp then tracks the exact
// sum up to the compensation's own bf16 rounding (8 bits of the residue, not of the weight): 1000 updates
// of 1e-4 to 1 end at 1.1015625 (round to nearest: 1.0). Throws Bf16UpdateError when weight or comp is not
// bf16, update is not fp32, or their shapes or devices differ; no sync.
void kahan_add_(const torch::Tensor& weight_bf16, const torch::Tensor& compensation_bf16,
                const torch::Tensor& update);

}  // namespace amp
