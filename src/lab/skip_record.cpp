#include "lab/skip_record.h"

#include <fmt/format.h>

namespace lab {

std::string skip_mismatch(const std::vector<bool>& stepped, const std::vector<bool>& overflowed,
                          const std::vector<bool>& moved) {
  if (stepped.size() != overflowed.size() || stepped.size() != moved.size())
    return "records of unequal length";
  for (size_t i = 0; i < stepped.size(); ++i) {
    if (moved[i] == overflowed[i])
      return fmt::format("step {}: gradients {}, weights {}", i, overflowed[i] ? "overflowed" : "finite",
                         moved[i] ? "moved" : "unchanged");
    if (stepped[i] != moved[i])
      return fmt::format("step {}: step() returned {} and the weights {}", i, stepped[i] ? "true" : "false",
                         moved[i] ? "moved" : "did not move");
  }
  return "";
}

nlohmann::json skip_mismatch_values(const std::vector<bool>& stepped, const std::vector<bool>& overflowed,
                                    const std::vector<bool>& moved) {
  const nlohmann::json agree = {
      {"step", -1}, {"gradients_finite", true}, {"weights_moved", true}, {"return_agrees", true}};
  if (stepped.size() != overflowed.size() || stepped.size() != moved.size()) return agree;
  for (size_t i = 0; i < stepped.size(); ++i)
    if (moved[i] == overflowed[i] || stepped[i] != moved[i])
      return {{"step", int(i)},
              {"gradients_finite", !overflowed[i]},
              {"weights_moved", bool(moved[i])},
              {"return_agrees", stepped[i] == moved[i]}};
  return agree;
}

}  // namespace lab
