// amp-lab-info: what `amp-lab info` prints (LibTorch's build, the CPU's 16-bit features, the CUDA device).
// The one program of the runner that links LibTorch, so that amp-lab itself builds in seconds.
#include <cstdio>
#include <iostream>

#include <cxxopts.hpp>

#include "lab/cli.h"
#include "lab/cli_args.h"
#include "lab/text.h"
#include "runner/info.h"

int main(int argc, char** argv) {
  try {
    lab::check_stdout_open();
    lab::check_argv(argc, argv);
    cxxopts::Options options("amp-lab info", "LibTorch build, the CPU's 16-bit features, the CUDA device.");
    options.add_options()("h,help", "show this help");
    auto args = options.parse(argc, argv);
    if (!args.unmatched().empty())
      throw lab::UsageError("unexpected argument " + lab::quote(args.unmatched().front()));
    if (lab::flag(args, "help"))
      std::cout << lab::help_text(options, lab::terminal_width());
    else
      runner::print_info(std::cout);
    lab::flush_stdout();
    return lab::kExitPass;
  } catch (const lab::OutputError& e) {
    std::fprintf(stderr, "amp-lab info: %s\n", e.what());
    return lab::kExitLabError;
  } catch (const std::exception& e) {  // UsageError and cxxopts' parse errors
    std::fprintf(stderr, "amp-lab info: %s\n", lab::one_line(e).c_str());
    return lab::kExitUsage;
  }
}
