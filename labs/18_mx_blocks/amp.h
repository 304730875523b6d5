// Lab 18's AMP code, as lab.cpp calls it: amp.cpp defines it.
#pragma once

#include <torch/types.h>

namespace lab18 {

// The E8M0 scale of each block: blocks [..., block_size] (fp32, one MX block per row of the last
// dimension), element_max the element format's largest finite value (E4M3 448, E2M1 6). Returns fp32
// [..., 1]: for each block a power of two 2^e, e an integer in [-127, 127] (what an E8M0 byte holds),
// with which the block's values divided by the scale fit the element format (|x| / scale <= element_max).
torch::Tensor e8m0_block_scale(const torch::Tensor& blocks, double element_max);

}  // namespace lab18
