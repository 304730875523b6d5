// Lab 15's judge: the guarded forward's scores against float64, and the dtypes of what it returns.
// The same q and k are multiplied here in float64; the dtypes of v and y in the fp16 and bf16 runs tell a
// guard that moves the scores alone to fp32 from one that leaves them in 16 bits or moves too much.
#include "judge.h"

#include <limits>

#include "lab/context.h"
#include "lab/libtorch.h"

namespace lab15::judge {

GuardVerdict judge_guard(Attention& net, const torch::Tensor& x) {
  GuardVerdict g;
  torch::NoGradGuard no_grad;
  const Forward f16 = forward(net, torch::kHalf, x, /*guard=*/true);
  const torch::Tensor ref = torch::matmul(f16.q.to(torch::kDouble), f16.k.to(torch::kDouble).transpose(1, 2));
  g.scores_dtype = lab::short_name(f16.scores.scalar_type());
  g.scores_nonfinite = (~torch::isfinite(f16.scores)).sum().item<int64_t>();
  // A NaN anywhere keeps the error NaN: the check's `<=` then fails.
  const torch::Tensor diff = (f16.scores.to(torch::kDouble) - ref).abs();
  g.scores_error = (torch::isfinite(diff).all().item<bool>() ? diff.max().item<double>()
                                                             : std::numeric_limits<double>::quiet_NaN()) /
                   ref.abs().max().item<double>();
  g.v_dtype_fp16 = lab::short_name(f16.v.scalar_type());
  g.y_dtype_fp16 = lab::short_name(f16.y.scalar_type());
  const Forward bf16 = forward(net, torch::kBFloat16, x, /*guard=*/false);
  g.v_dtype_bf16 = lab::short_name(bf16.v.scalar_type());
  g.y_dtype_bf16 = lab::short_name(bf16.y.scalar_type());
  return g;
}

}  // namespace lab15::judge
