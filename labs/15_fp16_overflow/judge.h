// Lab 15's judge (judge.cpp): the guarded forward's scores against float64, and the dtype of what it returns.
#pragma once

#include <cstdint>
#include <string>

#include "amp.h"

namespace lab15::judge {

// The learner's forward at step 0, guarded under fp16 autocast and unguarded under bf16 autocast.
struct GuardVerdict {
  std::string scores_dtype, v_dtype_fp16, v_dtype_bf16, y_dtype_fp16, y_dtype_bf16;
  double scores_error = 0;       // guarded step-0 scores vs float64 of the same q, k: max |diff| / max |ref|
  int64_t scores_nonfinite = 0;  // the guarded step-0 scores' inf/NaN values
};

// `net`: a copy of the untrained student, `x` the inputs.
GuardVerdict judge_guard(Attention& net, const torch::Tensor& x);

}  // namespace lab15::judge
