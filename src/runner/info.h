// `amp-lab info`: what this machine and this LibTorch offer for 16-bit training.
#pragma once

#include <iosfwd>

namespace runner {

void print_info(std::ostream& out);

}  // namespace runner
