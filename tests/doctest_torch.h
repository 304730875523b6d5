// doctest and LibTorch together. c10::toString(ScalarType) returns const char*, and doctest's
// unqualified toString() finds it by ADL and fails to compile on CHECK(dtype == dtype).
// Compare dtype names instead: the failure message then reads "BFloat16 == Float".
#pragma once

#include <string>

#include <torch/types.h>

inline std::string dtype_name(torch::ScalarType t) {
  return c10::toString(t);
}
inline std::string dtype_of(const torch::Tensor& t) {
  return dtype_name(t.scalar_type());
}
