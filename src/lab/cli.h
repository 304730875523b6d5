// Command-line pieces shared by every lab executable and by the amp-lab runner.
#pragma once

#include <optional>
#include <string>

#include <cxxopts.hpp>

#include "lab/cli_args.h"
#include "lab/context.h"

namespace lab {

struct LabInfo;

// `notice` receives what "auto" decided ("auto: no CUDA device, using the CPU"), to be printed.
Context context_from(const cxxopts::ParseResult& args, std::string* notice = nullptr);

at::Device resolve_device(const std::string& name, std::string* notice = nullptr);
// nullopt: the device's default (CPU bf16, CUDA fp16), as torch.autocast picks.
at::ScalarType resolve_dtype(const std::optional<std::string>& name, at::Device device);

// One line from any exception, without LibTorch's C++ backtrace, escaped and cut by safe_line().
std::string one_line(const std::exception& e);

// The command line of one lab: parses the flags, runs it, prints text or JSON; returns an ExitCode.
// `program` names it in messages ("lab01_master_weights", "amp-lab run master-weights").
int lab_cli(const LabInfo& info, int argc, const char* const* argv, const std::string& program);
// main() of a single-lab executable: runs the one lab linked into it.
int lab_main(int argc, char** argv);
// The id of the lab lab_main() runs in this process; "" when lab_main() is not running (the runner, tests).
// An exercise's executable is the lab's code with the learner's: its ranks must run it, not the lab's.
const std::string& lab_main_id();

}  // namespace lab
