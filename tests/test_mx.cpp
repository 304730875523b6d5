// amp::mx_quantize / amp::mx_dequantize (src/amp/mx.h): MX block formats. First against what this file
// computes itself (the OCP spec's scale rule in float64, the element formats' rounding bounds, the FP4
// codes and their packing), its refusals and its host syncs; then against torchao 0.18.0's to_mx and
// to_dtype (tests/parity/torchao_mx_trace.py): the same E8M0 scale bytes, element bytes and dequantized bits
// for every element format, scale mode and block size. Without a Python torchao those cases print
// "SKIPPED: <why>".
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "amp/mx.h"
#include "amp_lab_paths.h"
#include "lab/libtorch.h"
#include "support/host_reads.h"
#include "support/torchao_trace.h"

namespace test_mx {

namespace {

constexpr amp::MxScaleMode kModes[] = {amp::MxScaleMode::Floor, amp::MxScaleMode::Ceil,
                                       amp::MxScaleMode::Even, amp::MxScaleMode::RCeil};

torch::Tensor scale_bytes(const amp::MxTensor& q) {
  return q.scales.view(torch::kByte).to(torch::kInt);
}

at::Generator seeded(uint64_t seed) {
  at::Generator g = at::globalContext().defaultGenerator(torch::kCPU).clone();
  g.set_current_seed(seed);
  return g;
}

// A block of 31 ones and one 500 (OCP MX v1.0's rule leaves 500 / 2^0 above E4M3's 448).
torch::Tensor ones_and_500() {
  torch::Tensor x = torch::ones({1, 32});
  x[0][5] = 500.0;
  return x;
}

}  // namespace

TEST_CASE("mx_quantize's Floor saturates 500 among 31 ones at 448, and Ceil, Even and RCeil scale it by 2") {
  // Floor: 2^(floor(log2 500) - 8) = 2^0, and 500 > 448 saturates. Ceil, Even (500 rounds to 512) and RCeil
  // (ceil(log2(500 / 448)) = 1): 2^1, elements 250 -> 256 (E4M3 spacing 32 there) and 0.5.
  const torch::Tensor x = ones_and_500();
  const amp::MxTensor floor = amp::mx_quantize(x, torch::kFloat8_e4m3fn);
  CHECK(scale_bytes(floor).item<int>() == 127);
  CHECK(floor.elements[0][5].item<float>() == 448.0f);
  CHECK(floor.elements[0][0].item<float>() == 1.0f);
  CHECK(amp::mx_dequantize(floor)[0][5].item<float>() == 448.0f);
  for (const auto mode : {amp::MxScaleMode::Ceil, amp::MxScaleMode::Even, amp::MxScaleMode::RCeil}) {
    CAPTURE(static_cast<int>(mode));
    const amp::MxTensor q = amp::mx_quantize(x, torch::kFloat8_e4m3fn, 32, mode);
    CHECK(scale_bytes(q).item<int>() == 128);
    CHECK(q.elements[0][5].item<float>() == 256.0f);
    CHECK(q.elements[0][0].item<float>() == 0.5f);
    CHECK(amp::mx_dequantize(q)[0][5].item<float>() == 512.0f);
  }
}

TEST_CASE(
    "mx_quantize's Floor and Ceil scales are 2^(floor or ceil(log2 amax) - emax), computed in float64") {
  // Blocks of every magnitude; the exponent of each block's amax in float64 (frexp), minus the element
  // format's largest power of two (E4M3 8, E5M2 15, E2M1 2). Catches a wrong emax, a bias off by one and
  // Floor computed as Ceil.
  const at::Generator g = seeded(11);
  const torch::Tensor x =
      torch::randn({16, 64}, g) * torch::exp2(torch::randint(-30, 30, {16, 1}, g).to(torch::kFloat));
  const std::map<torch::ScalarType, int> emax{
      {torch::kFloat8_e4m3fn, 8}, {torch::kFloat8_e5m2, 15}, {torch::kFloat4_e2m1fn_x2, 2}};
  const torch::Tensor amax = x.to(torch::kDouble).abs().view({16, 2, 32}).amax(-1);
  for (const auto& [element, e] : emax) {
    for (const bool ceil : {false, true}) {
      CAPTURE(dtype_name(element));
      CAPTURE(ceil);
      const amp::MxTensor q =
          amp::mx_quantize(x, element, 32, ceil ? amp::MxScaleMode::Ceil : amp::MxScaleMode::Floor);
      const torch::Tensor got = scale_bytes(q);
      for (int64_t i = 0; i < amax.numel(); ++i) {
        const double a = amax.view(-1)[i].item<double>();
        int exp2 = 0;
        const double mantissa = std::frexp(a, &exp2);  // a = mantissa x 2^exp2, mantissa in [0.5, 1)
        const int floor_log2 = exp2 - 1;
        const int log2 = ceil && mantissa != 0.5 ? floor_log2 + 1 : floor_log2;
        CHECK(got.view(-1)[i].item<int>() == log2 - e + 127);
      }
    }
  }
}

TEST_CASE("mx_dequantize(mx_quantize(x)) is x within half an element spacing, and only Floor saturates") {
  // Without saturation (Ceil) each value is off by at most half the element format's spacing at its
  // magnitude times the block's scale: 2^-(m+1) relative for normal elements, 2^(emin-m-1) x scale for
  // subnormal ones. Catches elements not clamped, a wrong cast and a scale applied twice or not at all.
  struct Format {
    torch::ScalarType element;
    int mantissa_bits, min_exp;
    double max;
  };
  const Format formats[] = {{torch::kFloat8_e4m3fn, 3, -6, 448.0},
                            {torch::kFloat8_e5m2, 2, -14, 57344.0},
                            {torch::kFloat4_e2m1fn_x2, 1, 0, 6.0}};
  const at::Generator g = seeded(3);
  const torch::Tensor x =
      torch::randn({32, 64}, g) * torch::exp2(torch::randint(-8, 8, {32, 64}, g).to(torch::kFloat));
  for (const Format& f : formats) {
    CAPTURE(dtype_name(f.element));
    const amp::MxTensor q = amp::mx_quantize(x, f.element, 32, amp::MxScaleMode::Ceil);
    const torch::Tensor y = amp::mx_dequantize(q).to(torch::kDouble);
    const torch::Tensor scale =
        torch::exp2(scale_bytes(q).to(torch::kDouble) - 127).repeat_interleave(32, /*dim=*/-1);
    const torch::Tensor xd = x.to(torch::kDouble);
    const torch::Tensor bound = torch::maximum(xd.abs() * std::ldexp(1.0, -(f.mantissa_bits + 1)),
                                               scale * std::ldexp(1.0, f.min_exp - f.mantissa_bits - 1));
    const torch::Tensor err = (y - xd).abs();
    CHECK((err <= bound).all().item<bool>());
    CHECK(err.max().item<double>() > 0);                    // the rounding is there to measure
    CHECK((xd.abs() <= scale * f.max).all().item<bool>());  // Ceil: nothing above the element's maximum
    // Floor on the same blocks: some values exceed the maximum and come back as it, never beyond.
    const amp::MxTensor fq = amp::mx_quantize(x, f.element);
    const torch::Tensor fy = amp::mx_dequantize(fq).to(torch::kDouble);
    const torch::Tensor fscale =
        torch::exp2(scale_bytes(fq).to(torch::kDouble) - 127).repeat_interleave(32, /*dim=*/-1);
    const torch::Tensor saturated = xd.abs() > fscale * f.max;
    CHECK(saturated.any().item<bool>());
    CHECK(torch::equal(fy.abs().masked_select(saturated), (fscale * f.max).masked_select(saturated)));
  }
}

TEST_CASE("mx_quantize packs two E2M1 codes a byte, the even-indexed element in the low nibble") {
  // amax 6 gives the scale 2^0, so the values are the codes' own: 0, 0.5, 1, 1.5, 2, 3, 4, 6 are codes 0-7,
  // their negatives 8-15.
  const std::vector<float> values{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  const torch::Tensor x = torch::tensor(values).view({1, 16});
  const amp::MxTensor q = amp::mx_quantize(x, torch::kFloat4_e2m1fn_x2, 16);
  CHECK(dtype_of(q.elements) == "Byte");
  CHECK(q.elements.sizes() == torch::IntArrayRef({1, 8}));
  CHECK(scale_bytes(q).item<int>() == 127);
  const std::vector<int> want{0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  for (int i = 0; i < 8; ++i) CHECK(q.elements[0][i].item<int>() == want[i]);
  CHECK(torch::equal(amp::mx_dequantize(q), x));
  // Between codes: ties to even, and above 6 saturates.
  const torch::Tensor between = torch::tensor({0.25f, 0.75f, 2.5f, 5.0f, 5.5f, 6.0f}).view({1, 6});
  const torch::Tensor back = amp::mx_dequantize(amp::mx_quantize(between, torch::kFloat4_e2m1fn_x2, 6));
  CHECK(torch::equal(back, torch::tensor({0.0f, 1.0f, 2.0f, 4.0f, 6.0f, 6.0f}).view({1, 6})));
}

TEST_CASE("mx_quantize gives a block of zeros the scale byte 0 and a block with a NaN the NaN scale 0xFF") {
  torch::Tensor x = torch::zeros({2, 32});
  x[1][7] = std::nan("");
  for (const auto element : {torch::kFloat8_e4m3fn, torch::kFloat8_e5m2, torch::kFloat4_e2m1fn_x2}) {
    for (const auto mode : kModes) {
      CAPTURE(dtype_name(element));
      CAPTURE(static_cast<int>(mode));
      const amp::MxTensor q = amp::mx_quantize(x, element, 32, mode);
      CHECK(scale_bytes(q)[0].item<int>() == 0);
      CHECK(scale_bytes(q)[1].item<int>() == 0xFF);
      const torch::Tensor y = amp::mx_dequantize(q);
      CHECK(y[0].eq(0).all().item<bool>());
      CHECK(y[1].isnan().all().item<bool>());
    }
  }
}

TEST_CASE("mx_quantize keeps torchao's scale byte 0 for a block below 2^-118, so E4M3 returns it halved") {
  // amax 2^-122: Floor's exponent -122 - 8 is clamped to E8M0's -127 (the byte 0), but the elements are
  // divided by fp32's smallest normal 2^-126 (torchao's F32_MIN_NORMAL), giving 16; mx_dequantize multiplies
  // by 2^-127 (torchao's get_fp_scale): 2^-123. RCeil's byte 0 leaves the values unscaled instead.
  const torch::Tensor x = torch::full({1, 32}, std::ldexp(1.0f, -122));
  const amp::MxTensor q = amp::mx_quantize(x, torch::kFloat8_e4m3fn);
  CHECK(scale_bytes(q).item<int>() == 0);
  CHECK(q.elements[0][0].item<float>() == 16.0f);
  CHECK(amp::mx_dequantize(q)[0][0].item<float>() == std::ldexp(1.0f, -123));
  const amp::MxTensor r = amp::mx_quantize(x, torch::kFloat8_e4m3fn, 32, amp::MxScaleMode::RCeil);
  CHECK(scale_bytes(r).item<int>() == 0);
  CHECK(r.elements[0][0].item<float>() == 0.0f);  // 2^-122 is far below E4M3's smallest subnormal
}

TEST_CASE("mx_quantize and mx_dequantize read nothing back to the host") {
  // A boolean-mask assignment (torchao's max_abs[nan_mask] = nan) or an .item() would be such a read: on
  // CUDA a sync with the device.
  const torch::Tensor x = torch::randn({4, 64}, seeded(5));
  const test_support::HostReadCounter host_reads;
  for (const auto element : {torch::kFloat8_e4m3fn, torch::kFloat8_e5m2, torch::kFloat4_e2m1fn_x2}) {
    for (const auto mode : kModes) amp::mx_dequantize(amp::mx_quantize(x, element, 32, mode));
  }
  const int reads = host_reads.count();
  (void)x.sum().item<float>();  // the counter sees a read
  CHECK(reads == 0);
  CHECK(host_reads.count() > 0);
}

TEST_CASE("mx_quantize and mx_dequantize refuse bad dtypes, block sizes and shapes with an amp::Error") {
  const torch::Tensor x = torch::ones({2, 40});
  CHECK_THROWS_WITH_AS(amp::mx_quantize(x, torch::kFloat8_e4m3fn),
                       "amp::mx_quantize: the last dimension (40) must be a multiple of block_size (32)",
                       amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_quantize(x, torch::kBFloat16, 8), doctest::Contains("element must be"),
                       amp::Error);
  CHECK_THROWS_WITH_AS(amp::mx_quantize(x.to(torch::kDouble), torch::kFloat8_e5m2, 8),
                       "amp::mx_quantize: x must be fp32, bf16 or fp16, got Double", amp::Error);
  CHECK_THROWS_AS(amp::mx_quantize(x.to(torch::kInt), torch::kFloat8_e5m2, 8), amp::MxError);
  CHECK_THROWS_AS(amp::mx_quantize(x, torch::kFloat8_e4m3fn, 0), amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_quantize(x, torch::kFloat4_e2m1fn_x2, 5), doctest::Contains("even"),
                       amp::MxError);
  CHECK_THROWS_AS(amp::mx_quantize(torch::tensor(1.0f), torch::kFloat8_e4m3fn, 1), amp::MxError);
  CHECK_THROWS_AS(amp::mx_quantize(torch::Tensor(), torch::kFloat8_e4m3fn), amp::MxError);
  amp::MxTensor q = amp::mx_quantize(x, torch::kFloat8_e4m3fn, 8);
  CHECK_THROWS_WITH_AS(amp::mx_dequantize(q, torch::kInt), doctest::Contains("out must be"), amp::MxError);
  amp::MxTensor wrong_block = q;
  wrong_block.block_size = 10;
  CHECK_THROWS_AS(amp::mx_dequantize(wrong_block), amp::MxError);
  amp::MxTensor wrong_element = q;
  wrong_element.element = torch::kFloat4_e2m1fn_x2;  // its elements are E4M3, not packed bytes
  CHECK_THROWS_AS(amp::mx_dequantize(wrong_element), amp::MxError);
}

// ---- mx_matmul, mx_linear ----------------------------------------------------------------------------

TEST_CASE("mx_matmul's output and gradients are float64 products of the same fake-quantized operands") {
  // The reference: each GEMM's operands quantized and dequantized along the summed dimension (by
  // mx_fake_quantize, tested above against float64 and torchao), then multiplied in float64. Catches a GEMM
  // whose operands are quantized along the wrong dimension, or a backward that uses the unquantized
  // gradient or operands.
  constexpr int64_t kM = 64, kK = 96, kN = 32;
  for (const auto element : {torch::kFloat8_e4m3fn, torch::kFloat4_e2m1fn_x2}) {
    CAPTURE(element);
    at::Generator gen = seeded(11);
    const torch::Tensor a = (torch::randn({kM, kK}, gen) * 3).requires_grad_();
    const torch::Tensor b = torch::randn({kK, kN}, gen).requires_grad_();
    const torch::Tensor upstream = torch::randn({kM, kN}, gen);
    const amp::MxMatmulOptions o{.element = element, .grad_element = element};
    const torch::Tensor out = amp::mx_matmul(a, b, o);
    (out * upstream).sum().backward();
    auto fq64 = [&](const torch::Tensor& t) {
      return amp::mx_fake_quantize(t.detach(), element, 32, o.mode).to(torch::kDouble);
    };
    const torch::Tensor out_ref = fq64(a).matmul(fq64(b.t()).t());
    const torch::Tensor grad_a_ref = fq64(upstream).matmul(fq64(b).t());
    const torch::Tensor grad_b_ref = fq64(a.t()).matmul(fq64(upstream.t()).t());
    auto rel = [](const torch::Tensor& x, const torch::Tensor& ref) {
      return ((x.to(torch::kDouble) - ref).abs().max() / ref.abs().max()).item<double>();
    };
    constexpr double kFp32Sum = 1e-6;  // fp32 accumulation of <= 96 products, relative to the largest
    CHECK(rel(out, out_ref) < kFp32Sum);
    CHECK(rel(a.grad(), grad_a_ref) < kFp32Sum);
    CHECK(rel(b.grad(), grad_b_ref) < kFp32Sum);
    // The backward's quantization is visible: the unquantized gradient differs by far more than fp32's sum.
    const torch::Tensor exact_grad_a = upstream.to(torch::kDouble).matmul(b.detach().to(torch::kDouble).t());
    CHECK(rel(a.grad(), exact_grad_a) > 100 * kFp32Sum);
  }
}

TEST_CASE("mx_linear is mx_matmul of the flattened input and the weight's transpose, plus the bias") {
  at::Generator gen = seeded(12);
  const torch::Tensor x = torch::randn({2, 16, 64}, gen).requires_grad_();
  const torch::Tensor w = torch::randn({32, 64}, gen).requires_grad_();
  const torch::Tensor bias = torch::randn({32}, gen).requires_grad_();
  const torch::Tensor y = amp::mx_linear(x, w, bias);
  CHECK(y.sizes() == torch::IntArrayRef({2, 16, 32}));
  const torch::Tensor xd = x.detach(), wd = w.detach();
  const torch::Tensor ref = amp::mx_matmul(xd.reshape({32, 64}), wd.t()) + bias.detach();
  CHECK(torch::equal(y.detach().reshape({32, 32}), ref));
  y.sum().backward();
  CHECK(torch::allclose(bias.grad(), torch::full({32}, 32.0f)));
  CHECK(x.grad().sizes() == x.sizes());
  CHECK(w.grad().sizes() == w.sizes());
}

TEST_CASE("mx_matmul reads nothing back to the host, forward or backward") {
  at::Generator gen = seeded(13);
  const torch::Tensor a = torch::randn({32, 64}, gen).requires_grad_();
  const torch::Tensor b = torch::randn({64, 32}, gen).requires_grad_();
  const test_support::HostReadCounter host_reads;
  amp::mx_matmul(a, b).sum().backward();
  CHECK(host_reads.count() == 0);
}

TEST_CASE("mx_matmul and mx_linear refuse shapes a GEMM cannot block, and mixed dtypes") {
  const torch::Tensor a = torch::ones({32, 64}), b = torch::ones({64, 32});
  CHECK_THROWS_WITH_AS(amp::mx_matmul(torch::ones({40, 64}), b),
                       "amp::mx_matmul: M, a's rows (40) must be a multiple of block_size (32)",
                       amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_matmul(a, torch::ones({64, 48})), doctest::Contains("N, b's columns (48)"),
                       amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_matmul(a, torch::ones({32, 32})), doctest::Contains("do not multiply"),
                       amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_matmul(a, b.to(torch::kBFloat16)), doctest::Contains("one dtype"),
                       amp::MxError);
  CHECK_THROWS_AS(amp::mx_matmul(a.view({32, 2, 32}), b), amp::MxError);
  CHECK_THROWS_AS(amp::mx_matmul(a, b, {.element = torch::kBFloat16}), amp::MxError);
  CHECK_THROWS_WITH_AS(amp::mx_linear(a, b.t(), torch::ones({3})), doctest::Contains("bias must be [32]"),
                       amp::MxError);
}

// ---- torchao ----------------------------------------------------------------------------------------

namespace {

// torchao's trace (tests/parity/torchao_mx_trace.py), once per run (test_support::run_torchao_trace).
const std::optional<nlohmann::json>& torchao_trace() {
  static const std::optional<nlohmann::json> doc = test_support::run_torchao_trace("torchao_mx_trace");
  return doc;
}

using test_support::from_bits;

// The bits of a tensor as integers of its width, for an exact comparison (NaN payloads included).
torch::Tensor bits_of(const torch::Tensor& t) {
  const int64_t size = t.element_size();
  const auto int_type = size == 4 ? torch::kInt : size == 2 ? torch::kShort : torch::kByte;
  return t.contiguous().view(int_type).to(torch::kLong).flatten();
}

}  // namespace

TEST_CASE("mx_quantize and mx_dequantize give torchao's to_mx and to_dtype bytes bit for bit") {
  const auto& doc = torchao_trace();
  if (!doc) return;
  REQUIRE_MESSAGE(doc->contains("cases"), "tests/parity/torchao_mx_trace.py failed");
  const std::map<std::string, torch::ScalarType> elements{
      {"e4m3", torch::kFloat8_e4m3fn}, {"e5m2", torch::kFloat8_e5m2}, {"e2m1", torch::kFloat4_e2m1fn_x2}};
  const std::map<std::string, amp::MxScaleMode> modes{{"floor", amp::MxScaleMode::Floor},
                                                      {"ceil", amp::MxScaleMode::Ceil},
                                                      {"even", amp::MxScaleMode::Even},
                                                      {"rceil", amp::MxScaleMode::RCeil}};
  int cases = 0, equal = 0;
  std::map<std::string, int> per_mode, per_element;
  for (const auto& c : (*doc)["cases"]) {
    const std::string what = c["name"].get<std::string>() + ", " + c["element"].get<std::string>() + ", " +
                             c["mode"].get<std::string>() + ", block " +
                             std::to_string(c["block_size"].get<int>());
    CAPTURE(what);
    const auto dtype = c["dtype"] == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
    const torch::Tensor x = from_bits(c["x"], dtype, c["shape"].get<std::vector<int64_t>>());
    const amp::MxTensor q =
        amp::mx_quantize(x, elements.at(c["element"]), c["block_size"].get<int64_t>(), modes.at(c["mode"]));
    const torch::Tensor want_scales = torch::tensor(c["scales"].get<std::vector<int64_t>>(), torch::kLong);
    const torch::Tensor want_elements =
        torch::tensor(c["elements"].get<std::vector<int64_t>>(), torch::kLong);
    const torch::Tensor want_back = torch::tensor(c["dequantized"].get<std::vector<int64_t>>(), torch::kLong);
    CHECK(q.scales.sizes().vec() == c["scale_shape"].get<std::vector<int64_t>>());
    const bool same_scales = torch::equal(bits_of(q.scales), want_scales);
    const bool same_elements = torch::equal(bits_of(q.elements), want_elements);
    const bool same_back = torch::equal(bits_of(amp::mx_dequantize(q, dtype)), want_back);
    CHECK(same_scales);
    CHECK(same_elements);
    CHECK(same_back);
    ++cases;
    if (same_scales && same_elements && same_back) {
      ++equal;
      ++per_mode[c["mode"]];
      ++per_element[c["element"]];
    }
  }
  MESSAGE("torchao " << (*doc)["torchao_version"].get<std::string>() << ": " << equal << " of " << cases
                     << " cases bitwise equal (scales, elements, dequantized)");
  // Every mode and every element format was compared, on the trace's 10 inputs and their block sizes.
  CHECK(cases == 252);
  for (const auto& [mode, _] : modes) CHECK(per_mode[mode] == cases / 4);
  for (const auto& [element, _] : elements) CHECK(per_element[element] == cases / 3);
}

}  // namespace test_mx
