// A wrong solution kept by the tests (tests/test_exercises.cpp): no all-reduce of found_inf: each rank
// decides from its own shard.
//
// expect-hint: local-verdict
#include "exercise/13_data_parallel.h"

namespace lab13 {
// This rank's scaler. With sharded gradients, give it the process group: found_inf is then all-reduced
// before step() decides, so every rank skips the same steps (PyTorch's ShardedGradScaler).
amp::GradScaler make_scaler(torch::Device device, const c10::intrusive_ptr<c10d::Backend>& pg,
                            bool global_verdict) {
  amp::GradScalerOptions options{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
  return amp::GradScaler(device, options);
}
}  // namespace lab13
