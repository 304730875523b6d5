#include "lab/context.h"

namespace lab {

std::string short_name(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf:
      return "fp16";
    case at::kBFloat16:
      return "bf16";
    case at::kFloat:
      return "fp32";
    case at::kDouble:
      return "fp64";
    default:
      return c10::toString(dtype);
  }
}

std::string short_names(const std::vector<at::Tensor>& tensors) {
  std::string s;
  for (const auto& t : tensors) s += (s.empty() ? "" : ", ") + short_name(t.scalar_type());
  return s;
}

}  // namespace lab
