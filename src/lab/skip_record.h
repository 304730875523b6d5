// A scaled training step's three records, each taken apart from the others: what the step returned
// (stepped), whether the lab's own backward at the step's scale found an inf or NaN (overflowed), and
// whether any weight changed, bitwise (moved). A skipped step must leave every weight as it was and a
// stepped one move them; a step that steps the optimizer whatever it found, or returns what it did not do,
// shows as a mismatch. Labs 02 and 06 judge their check skips-exactly-overflows with it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lab {

// Empty when the records agree at every step, else the first step where they do not, in words ("step 3:
// gradients overflowed, weights moved"); records of unequal length are a mismatch too.
std::string skip_mismatch(const std::vector<bool>& stepped, const std::vector<bool>& overflowed,
                          const std::vector<bool>& moved);

// The same first mismatch as named values, for the check's values: step, gradients_finite (the lab's own
// backward found no inf/NaN), weights_moved and return_agrees (the step returned true exactly when the
// weights moved); where the records agree (or differ in length) step is -1 and the others true.
nlohmann::json skip_mismatch_values(const std::vector<bool>& stepped, const std::vector<bool>& overflowed,
                                    const std::vector<bool>& moved);

}  // namespace lab
