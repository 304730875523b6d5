#include "lab/cli.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "amp/device_caps.h"
#include "lab/registry.h"
#include "lab/text.h"

namespace lab {

void add_context_options(cxxopts::Options& options) {
  options.add_options()
      ("device", "auto, cpu or cuda (auto picks CUDA when present)", cxxopts::value<std::string>()->default_value("auto"))
      ("dtype", "16-bit type: fp16 or bf16 (default: bf16 on CPU, fp16 on CUDA)", cxxopts::value<std::string>())
      ("seed", "random seed (a non-negative integer)", cxxopts::value<std::string>()->default_value("0"))
      ("quick", "smallest sizes that still show the effect (for tests)")
      ("flip", "remove the cause of the effect; the lab's checks should then fail");
}

torch::Device resolve_device(const std::string& name, std::string* notice) {
  if (name == "cpu") return torch::kCPU;
  if (name == "cuda") {
    if (!amp::cuda_available())
      throw UsageError("--device cuda: no CUDA device is available here (use --device cpu or auto)");
    return torch::Device(torch::kCUDA, 0);
  }
  if (name == "auto") {
    if (amp::cuda_available()) {
      if (notice) *notice = "auto: CUDA found (" + amp::cuda_device_name() + "), using cuda:0";
      return torch::Device(torch::kCUDA, 0);
    }
    if (notice) *notice = "auto: no CUDA device found, using the CPU";
    return torch::kCPU;
  }
  throw UsageError("--device must be auto, cpu or cuda, got '" + name + "'");
}

torch::ScalarType resolve_dtype(const std::optional<std::string>& name, torch::Device device) {
  if (!name) return device.is_cuda() ? torch::kHalf : torch::kBFloat16;
  torch::ScalarType dtype;
  if (*name == "fp16" || *name == "float16" || *name == "half") dtype = torch::kHalf;
  else if (*name == "bf16" || *name == "bfloat16") dtype = torch::kBFloat16;
  else throw UsageError("--dtype must be fp16 or bf16, got '" + *name + "'");
  if (device.is_cuda() && dtype == torch::kBFloat16 && !amp::cuda_supports_bf16())
    throw UsageError("--dtype bf16: this CUDA device (" + amp::cuda_device_name() + ") has no bfloat16 support");
  return dtype;
}

Context context_from(const cxxopts::ParseResult& args, std::string* notice) {
  Context ctx;
  ctx.device = resolve_device(args["device"].as<std::string>(), notice);
  ctx.dtype = resolve_dtype(args.count("dtype") ? std::optional(args["dtype"].as<std::string>()) : std::nullopt, ctx.device);
  ctx.dtype_given = args.count("dtype") > 0;
  const std::string seed = args["seed"].as<std::string>();
  char* end = nullptr;
  errno = 0;
  ctx.seed = std::strtoull(seed.c_str(), &end, 10);
  if (seed.empty() || seed[0] == '-' || *end != '\0' || errno == ERANGE)
    throw UsageError("--seed must be a non-negative integer, got '" + seed + "'");
  ctx.quick = args.count("quick") > 0;
  ctx.flip = args.count("flip") > 0;
  return ctx;
}

std::string one_line(const std::exception& e) {
  std::string msg;
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) msg = c10e->what_without_backtrace();
  else msg = e.what();
  const auto nl = msg.find('\n');
  return nl == std::string::npos ? msg : msg.substr(0, nl);
}

int lab_cli(const LabInfo& info, int argc, const char* const* argv, const std::string& program) {
  cxxopts::Options options(program, info.title + " (quiz question " + std::to_string(info.question) + ")");
  add_context_options(options);
  options.add_options()
      ("json", "print the report as JSON")
      ("no-color", "plain text even on a terminal")
      ("h,help", "show this help");
  Context ctx;
  bool json = false, no_color = false;
  std::string notice;
  try {
    auto args = options.parse(argc, argv);
    if (args.count("help")) {
      std::cout << options.help() << "\nExit codes: 0 every check holds, 1 a check failed, 2 bad usage, 3 the lab failed.\n";
      return kExitPass;
    }
    if (!args.unmatched().empty()) throw UsageError("unexpected argument '" + args.unmatched().front() + "'");
    ctx = context_from(args, &notice);
    json = args.count("json") > 0;
    no_color = args.count("no-color") > 0;
  } catch (const std::exception& e) {  // cxxopts' parse errors and our UsageError alike
    std::fprintf(stderr, "%s: %s\n", program.c_str(), one_line(e).c_str());
    return kExitUsage;
  }
  try {
    if (!notice.empty()) (json ? std::cerr : std::cout) << notice << "\n";
    Report report = run_lab(info, ctx);
    if (json) std::cout << report.to_json().dump(2) << "\n";
    else std::cout << report.render_text({.color = want_color(no_color)});
    return report.passed() ? kExitPass : kExitCheckFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: lab failed: %s\n", program.c_str(), one_line(e).c_str());
    return kExitLabError;
  }
}

int lab_main(int argc, char** argv) {
  if (labs().size() != 1) {
    std::fprintf(stderr, "error: this executable should hold exactly one lab, it holds %zu\n", labs().size());
    return kExitLabError;
  }
  return lab_cli(labs().front(), argc, argv, labs().front().executable);
}

}  // namespace lab
