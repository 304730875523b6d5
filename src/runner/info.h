// `amp-lab info`: what this machine and this LibTorch offer for 16-bit training.
#pragma once

#include <iosfwd>
#include <string>

namespace runner {

void print_info(std::ostream& out);
// The LibTorch this program was built with: "2.13.0 (CPU-only build)" or "2.13.0 (CUDA build)".
std::string libtorch_build();

}  // namespace runner
