// Exercise 13: one inf/NaN verdict for sharded gradients (lab 13, labs/13_data_parallel.cpp).
//
// Write make_scaler(): each rank's GradScaler. Two ranks train one model over c10d (Gloo, on 127.0.0.1)
// under fp16 autocast. With DDP every rank holds every all-reduced gradient and sees the same inf/NaN;
// with sharded gradients (ZeRO) each rank unscales and checks only its own shard, and the ranks must
// still skip the same steps, or their scales part and the replicas drift apart. The lab runs DDP, then
// sharded training with global_verdict false and with it true, and compares the last with DDP.
//
//   amp-lab check 13    builds this file with the lab and runs the lab's checks on it
//   amp-lab watch 13    the same on every save, until every check holds
//
// amp/distributed.h: amp::found_inf_all_reduce(pg) makes an all-reduce of found_inf over the process
// group pg; a scaler whose GradScalerOptions::process_group is set all-reduces found_inf before step()
// decides (PyTorch's ShardedGradScaler). From the lab: kInitScale (2^16), kGrowthInterval (3).
#include "exercise/13_data_parallel.h"
#include "amp/distributed.h"
#include "amp/grad_scaler.h"

namespace lab13 {

// This rank's scaler; `global_verdict`: the ranks must agree on every inf/NaN (sharded gradients).
amp::GradScaler make_scaler(torch::Device device, const c10::intrusive_ptr<c10d::Backend>& pg,
                            bool global_verdict) {
  amp::GradScalerOptions options{.init_scale = kInitScale, .growth_interval = kGrowthInterval};
  // TODO: when global_verdict, give the scaler the process group's all-reduce of found_inf, so that
  //       every rank skips a step when any rank's shard holds an inf or NaN.
  return amp::GradScaler(device, options);
}

}  // namespace lab13
