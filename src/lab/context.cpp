#include "lab/context.h"

#include <c10/core/ScalarType.h>

namespace lab {

std::string short_name(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kHalf:
      return "fp16";
    case torch::kBFloat16:
      return "bf16";
    case torch::kFloat:
      return "fp32";
    case torch::kDouble:
      return "fp64";
    default:
      return c10::toString(dtype);
  }
}

std::string short_names(const std::vector<torch::Tensor>& tensors) {
  std::string s;
  for (const auto& t : tensors) s += (s.empty() ? "" : ", ") + short_name(t.scalar_type());
  return s;
}

}  // namespace lab
