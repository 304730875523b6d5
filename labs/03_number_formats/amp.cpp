// Lab 03's AMP code: the casts autocast makes, tensor.to(kHalf) and .to(kBFloat16), and a look at the bits
// they store. lab.cpp runs them on fp32 values at and past each format's limits, and on random patterns.
#include "amp.h"

namespace lab03 {

std::vector<float> round_trip(const std::vector<float>& values, torch::ScalarType dtype,
                              torch::Device device) {
  auto t = torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat).device(device));
  auto back = t.to(dtype).to(torch::kFloat).cpu().contiguous();  // rounded once, to the nearest in dtype
  return {back.data_ptr<float>(), back.data_ptr<float>() + back.numel()};
}

std::vector<uint32_t> bits_of(const torch::Tensor& values, torch::ScalarType dtype) {
  const auto t = values.to(dtype);
  const bool two_bytes = t.element_size() == 2;
  // view() reinterprets the same bytes as integers (no conversion); int64 so that the loop reads one type.
  const auto ints = t.view(two_bytes ? torch::kInt16 : torch::kInt32).to(torch::kInt64).cpu().contiguous();
  const uint32_t mask = two_bytes ? 0xFFFFu : 0xFFFFFFFFu;  // int16 -1 sign-extends: keep 16 bits
  std::vector<uint32_t> out;
  for (const int64_t* v = ints.data_ptr<int64_t>(); v != ints.data_ptr<int64_t>() + ints.numel(); ++v)
    out.push_back(static_cast<uint32_t>(*v) & mask);
  return out;
}

}  // namespace lab03
