// Lab 03's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace lab03 {

// fp32 -> dtype -> fp32 through tensor casts on `device`, one value per element: autocast's casts.
std::vector<float> round_trip(const std::vector<float>& values, torch::ScalarType dtype,
                              torch::Device device);

// The bit patterns of `values` stored as `dtype` (16 or 32 bits), read through an integer view of the bytes.
std::vector<uint32_t> bits_of(const torch::Tensor& values, torch::ScalarType dtype);

}  // namespace lab03
