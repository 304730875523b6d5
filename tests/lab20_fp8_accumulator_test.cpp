// Lab 20 (fp8-accumulator, Q20): what tests/test_labs.cpp does not cover. The lab's model of the tensor
// core's accumulator on inputs worked by hand, and against the mmaemu package (PyPI), which gives an H100
// PCIe's FP8 GEMM accumulators bit for bit on the CPU (tests/parity/mmaemu_accumulate_trace.py): the model's
// one chain is mmaemu's fast accumulation and amp.cpp's promotion its default accumulation, where the H100
// does not split K; where it does, they differ. Without a Python mmaemu those cases print "SKIPPED: <why>".
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../labs/20_fp8_accumulator/amp.h"
#include "lab/libtorch.h"
#include "support/torchao_trace.h"

namespace lab20_fp8_accumulator_test {

namespace {

torch::Tensor e4m3(const std::vector<float>& values, int64_t rows) {
  return torch::tensor(values).view({rows, -1}).to(torch::kFloat8_e4m3fn);
}

// E4M3 codes from a hex string, as a [rows, cols] tensor.
torch::Tensor from_hex(const std::string& hex, int64_t rows, int64_t cols) {
  std::vector<uint8_t> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return torch::from_blob(bytes.data(), {rows, cols}, torch::kByte).clone().view(torch::kFloat8_e4m3fn);
}

// The largest relative error against the float64 product of the same FP8 values.
double error_vs_float64(const torch::Tensor& acc, const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor ref = torch::matmul(a.to(torch::kDouble), b.to(torch::kDouble).t());
  return ((acc.to(torch::kDouble) - ref).abs() / ref.abs()).max().item<double>();
}

const std::optional<nlohmann::json>& mmaemu_trace() {
  static const std::optional<nlohmann::json> doc = test_support::run_python_trace(
      "mmaemu_accumulate_trace", "mmaemu", "mmaemu", "mmaemu", "pip install mmaemu==0.1.0");
  return doc;
}

}  // namespace

TEST_CASE("the 14-bit accumulator cuts what it cannot hold: 2^14 plus 31 ones stays 2^14, FP32 keeps them") {
  // One step of 32 products: 128 x 128 = 2^14, then 31 products 1 x 1. Aligned to 2^14, the accumulator's
  // last bit is 2^(14 - 13) = 2: each 1 truncates to 0.
  std::vector<float> a(32, 1), b(32, 1);
  a[0] = b[0] = 128;
  const lab20::TensorCore limited, fp32{.fp32_accumulator = true};
  CHECK(limited.chain(e4m3(a, 1), e4m3(b, 1)).item<float>() == 16384);
  CHECK(fp32.chain(e4m3(a, 1), e4m3(b, 1)).item<float>() == 16384 + 31);
  // The ones of the next step are lost too: the accumulator c takes part in the alignment. Ones before the
  // large product are kept while the sum is small (32, exact, a multiple of the later unit 2); the 31 ones
  // beside 2^14 are not.
  std::vector<float> a2(64, 1), b2(64, 1);
  a2[0] = b2[0] = 128;
  CHECK(limited.chain(e4m3(a2, 1), e4m3(b2, 1)).item<float>() == 16384);
  std::vector<float> a3(64, 1), b3(64, 1);
  a3[63] = b3[63] = 128;
  CHECK(limited.chain(e4m3(a3, 1), e4m3(b3, 1)).item<float>() == 16384 + 32);
  // A negative sum truncates toward zero; a zero result is +0.
  std::vector<float> neg(32, -1), one(32, 1);
  neg[0] = -128;
  CHECK(limited.chain(e4m3(neg, 1), e4m3(a, 1)).item<float>() == -16384);
  const torch::Tensor zero = limited.chain(e4m3(std::vector<float>(32, 0), 1), e4m3(one, 1));
  CHECK_FALSE(std::signbit(zero.item<float>()));
}

TEST_CASE("the tensor core model takes E4M3 matrices with one K, and nothing else") {
  const lab20::TensorCore tc;
  const torch::Tensor a = torch::ones({2, 32}).to(torch::kFloat8_e4m3fn);
  CHECK_THROWS_AS(tc.chain(a.to(torch::kFloat), a), std::invalid_argument);
  CHECK_THROWS_AS(tc.chain(a, torch::ones({2, 64}).to(torch::kFloat8_e4m3fn)), std::invalid_argument);
  CHECK_THROWS_AS(tc.chain(a.view({64}), a), std::invalid_argument);
  // K need not be a multiple of 32: the last step is zero padded, which changes nothing.
  CHECK(
      tc.chain(torch::ones({1, 40}).to(torch::kFloat8_e4m3fn), torch::ones({1, 40}).to(torch::kFloat8_e4m3fn))
          .item<float>() == 40);
}

TEST_CASE(
    "unsplit, the lab's one chain and amp.cpp's promotion give mmaemu's H100 accumulators bit for bit") {
  const auto& doc = mmaemu_trace();
  if (!doc) return;
  REQUIRE_MESSAGE(doc->contains("cases"), "tests/parity/mmaemu_accumulate_trace.py failed");
  const lab20::TensorCore tc;
  int compared = 0;
  for (const auto& c : (*doc)["cases"]) {
    if (c["fast_splits"].get<int>() != 1 || c["slow_splits"].get<int>() != 1) continue;
    const std::string name = c["name"].get<std::string>();
    CAPTURE(name);
    const int64_t m = c["m"], n = c["n"], k = c["k"];
    const torch::Tensor a = from_hex(c["a"], m, k), b = from_hex(c["b"], n, k);
    const torch::Tensor fast = test_support::from_bits(c["fast"], torch::kFloat, {m, n});
    const torch::Tensor slow = test_support::from_bits(c["slow"], torch::kFloat, {m, n});
    CHECK(torch::equal(tc.chain(a, b).view(torch::kInt), fast.view(torch::kInt)));
    CHECK(torch::equal(lab20::promoted_gemm(tc, a, b).view(torch::kInt), slow.view(torch::kInt)));
    ++compared;
  }
  CHECK(compared == 9);
  MESSAGE("mmaemu " << (*doc)["mmaemu_version"].get<std::string>() << " ("
                    << (*doc)["profile"].get<std::string>() << "): " << compared
                    << " unsplit cases, fast and default accumulation, bit for bit");
}

TEST_CASE(
    "where the H100 splits K, each split is a chain of its own: its fast accumulation beats one chain") {
  const auto& doc = mmaemu_trace();
  if (!doc) return;
  REQUIRE_MESSAGE(doc->contains("cases"), "tests/parity/mmaemu_accumulate_trace.py failed");
  const lab20::TensorCore tc;
  bool seen = false;
  for (const auto& c : (*doc)["cases"]) {
    if (c["fast_splits"].get<int>() == 1) continue;
    seen = true;
    const int64_t m = c["m"], n = c["n"], k = c["k"];
    const torch::Tensor a = from_hex(c["a"], m, k), b = from_hex(c["b"], n, k);
    const torch::Tensor fast = test_support::from_bits(c["fast"], torch::kFloat, {m, n});
    const torch::Tensor slow = test_support::from_bits(c["slow"], torch::kFloat, {m, n});
    const torch::Tensor chain = tc.chain(a, b), promoted = lab20::promoted_gemm(tc, a, b);
    const double lab_fast = error_vs_float64(chain, a, b), h100_fast = error_vs_float64(fast, a, b);
    const double lab_slow = error_vs_float64(promoted, a, b), h100_slow = error_vs_float64(slow, a, b);
    MESSAGE(c["name"].get<std::string>()
            << ", " << c["fast_splits"].get<int>() << " splits: fast accumulation " << h100_fast
            << " (the lab's one chain " << lab_fast << "), default " << h100_slow << " (amp.cpp's promotion "
            << lab_slow << ")");
    CHECK_FALSE(torch::equal(chain, fast));
    CHECK(h100_fast < lab_fast / 2);
    // Without fast accumulation both add chains of 128 in FP32, only grouped otherwise: the same error size.
    CHECK(h100_slow < 2 * lab_slow);
    CHECK(lab_slow < 2 * h100_slow);
  }
  CHECK(seen);
}

}  // namespace lab20_fp8_accumulator_test
