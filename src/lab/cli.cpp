#include "lab/cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include "amp/detail/atomic_file.h"
#include "amp/device_caps.h"
#include "lab/registry.h"
#include "lab/text.h"
#include "runner/data_files.h"

namespace lab {

at::Device resolve_device(const std::string& name, std::string* notice) {
  if (name == "cpu") return at::kCPU;
  if (name == "cuda") {
    if (!amp::cuda_available())
      throw UsageError("--device cuda: no CUDA device is available here (use --device cpu or auto)");
    return at::Device(at::kCUDA, 0);
  }
  if (name == "auto") {
    if (amp::cuda_available()) {
      if (notice) *notice = "auto: CUDA found (" + amp::cuda_device_name() + "), using cuda:0";
      return at::Device(at::kCUDA, 0);
    }
    if (notice) *notice = "auto: no CUDA device found, using the CPU";
    return at::kCPU;
  }
  throw UsageError("--device must be auto, cpu or cuda, got " + quote(name));
}

at::ScalarType resolve_dtype(const std::optional<std::string>& name, at::Device device) {
  if (!name) return device.is_cuda() ? at::kHalf : at::kBFloat16;
  at::ScalarType dtype;
  if (*name == "fp16" || *name == "float16" || *name == "half")
    dtype = at::kHalf;
  else if (*name == "bf16" || *name == "bfloat16")
    dtype = at::kBFloat16;
  else
    throw UsageError("--dtype must be fp16 or bf16, got " + quote(*name));
  if (device.is_cuda() && dtype == at::kBFloat16 && !amp::cuda_supports_bf16())
    throw UsageError("--dtype bf16: this CUDA device (" + amp::cuda_device_name() +
                     ") has no bfloat16 support");
  return dtype;
}

Context context_from(const cxxopts::ParseResult& args, std::string* notice) {
  const ContextArgs c = context_args(args);
  Context ctx;
  ctx.device = resolve_device(c.device, notice);
  ctx.dtype = resolve_dtype(c.dtype, ctx.device);
  ctx.dtype_given = c.dtype.has_value();
  ctx.seed = c.seed;
  ctx.quick = c.quick;
  ctx.flip = c.flip;
  return ctx;
}

std::string one_line(const std::exception& e) {
  std::string msg;
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) {
    msg = c10e->what_without_backtrace();
    msg = msg.substr(0, msg.find('\n'));  // LibTorch's own lines after the first are its backtrace
  } else {
    msg = e.what();
  }
  return safe_line(msg);
}

namespace {

// What --help says of the lab's types, and a refused --dtype's message: from its declaration.
std::string types_line(const LabInfo& info) {
  const LabDecl* decl = info.decl;
  if (!decl || decl->types.empty()) return "";
  if (decl->takes_dtype()) return "Types: " + decl->types + " (--dtype above).";
  return "Types: " + decl->types + ", fixed by the lab's question: --dtype does not apply (labs " +
         labs_taking_dtype() + " take it).";
}

UsageError dtype_refused(const LabInfo& info) {
  const std::string types =
      info.decl && !info.decl->types.empty() ? info.decl->types : "the types its question fixes";
  return UsageError("--dtype does not apply to this lab: it runs " + types +
                    ", which its question fixes (--dtype chooses the 16-bit type in labs " +
                    labs_taking_dtype() + ")");
}

// The report's descriptor a judge handed this process (kReportFdVar), taken once: the variable is removed
// and the descriptor made close-on-exec, so that the ranks this lab starts get neither. -1 when there is
// none; UsageError when the variable names no regular file open for writing.
int take_report_fd() {
  const char* v = std::getenv(kReportFdVar);
  if (!v) return -1;
  const std::string value = v;
  ::unsetenv(kReportFdVar);
  const bool digits =
      !value.empty() && value.size() < 6 && value.find_first_not_of("0123456789") == std::string::npos;
  const int fd = digits ? std::stoi(value) : -1;
  struct stat st{};
  const int flags = fd > 2 ? ::fcntl(fd, F_GETFL) : -1;
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw UsageError(fmt::format("{} must name a file open for writing, got {}", kReportFdVar, quote(value)));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

// The whole report at the start of the judge's file, in place of anything there.
void write_report_fd(int fd, const std::string& text) {
  if (::ftruncate(fd, 0) != 0) throw OutputError(std::string("the report: ") + std::strerror(errno));
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw OutputError(std::string("the report: ") + std::strerror(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

int lab_cli(const LabInfo& info, int argc, const char* const* argv, const std::string& program) {
  // The neutral heading, not the title: the title states the answer of the lab's quiz question.
  cxxopts::Options options(program, info.heading + " (quiz question " + std::to_string(info.question) + ")");
  // --dtype is there only in a lab that declares what it chooses (labs/catalog.cpp's dtype_choice).
  const bool takes_dtype = info.decl && info.decl->takes_dtype();
  add_context_options(options, takes_dtype ? info.decl->dtype_choice : "");
  add_lab_options(options);
  Context ctx;
  bool json = false, no_color = false;
  std::string notice, report_file;
  int report_fd = -1;
  try {
    check_stdout_open();
  } catch (const OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return kExitLabError;
  }
  try {
    check_argv(argc, argv);
    if (!takes_dtype && names_option(argc, argv, "dtype")) throw dtype_refused(info);
    auto args = options.parse(argc, argv);
    if (flag(args, "help")) {
      const size_t width = terminal_width();
      std::cout << help_text(options, width) << "\n";
      if (const std::string types = types_line(info); !types.empty())
        std::cout << paragraph("", types, width, 0) << "\n";
      std::cout << paragraph(
                       "",
                       "Exit codes: 0 every check holds, 1 a check failed, 2 bad usage, 3 the lab failed.",
                       width, 0)
                << "\n";
      try {
        flush_stdout();  // help to a full disk is a failed write, not a silent success
      } catch (const OutputError& e) {
        std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
        return kExitLabError;
      }
      return kExitPass;
    }
    if (!args.unmatched().empty()) throw UsageError("unexpected argument " + quote(args.unmatched().front()));
    ctx = context_from(args, &notice);
    json = flag(args, "json");
    if (args.count("report-file")) report_file = args["report-file"].as<std::string>();
    if (json && !report_file.empty()) throw UsageError("--json and --report-file: choose one");
    // Not '', nor the next flag taken for its value, nor a file amp-lab reads (runner/data_files.h).
    if (args.count("report-file")) runner::check_output_path("--report-file", report_file);
    report_fd = take_report_fd();
    if (report_fd >= 0 && (json || !report_file.empty()))
      throw UsageError(fmt::format("{} with --json or --report-file: choose one", kReportFdVar));
    if (!report_file.empty()) {
      // Said now, not after the lab's run: a folder that is not there, or a device node, a FIFO or a
      // folder at the path, which the write will not replace (amp/detail/atomic_file.h).
      try {
        amp::detail::AtomicFile probe(report_file);
      } catch (const amp::detail::AtomicFileError& e) {
        throw UsageError(
            fmt::format("--report-file: cannot write {}: {}", quote(report_file), e.code().message()));
      }
    }
    no_color = flag(args, "no-color");
  } catch (const std::exception& e) {  // cxxopts' parse errors and our UsageError alike
    std::fprintf(stderr, "%s: %s\n", program.c_str(), one_line(e).c_str());
    return kExitUsage;
  }
  try {
    const bool to_file = !report_file.empty() || report_fd >= 0;
    if (!notice.empty()) (json || to_file ? std::cerr : std::cout) << notice << "\n";
    Report report = run_lab(info, ctx);
    if (report_fd >= 0) {  // a judge's: written by the lab after its checks, as --report-file is
      write_report_fd(report_fd,
                      report.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    } else if (!report_file.empty()) {
      // Written by the lab, after its checks: a judge that reads this file reads no line the lab's code
      // printed, and a program that ends before here leaves no report at all.
      try {
        amp::detail::write_file_atomically(
            report_file,
            report.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      } catch (const std::exception& e) {
        throw OutputError(one_line(e));
      }
    } else if (json)
      std::cout << report.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      std::cout << report.render_text({.color = want_color(no_color), .width = terminal_width()});
    flush_stdout();
    return report.passed() ? kExitPass : kExitCheckFailed;
  } catch (const OutputError& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return kExitLabError;
  } catch (const UsageError& e) {  // a bad value the lab read from the environment (lab 13's MASTER_PORT...)
    std::fprintf(stderr, "%s: %s\n", program.c_str(), one_line(e).c_str());
    return kExitUsage;
  } catch (const Interrupted& e) {  // a signal while the lab's rank processes ran: they were stopped
    std::fprintf(stderr, "%s: %s\n", program.c_str(), one_line(e).c_str());
    return 128 + e.signal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: lab failed: %s\n", program.c_str(), one_line(e).c_str());
    return kExitLabError;
  }
}

namespace {
std::string g_lab_main_id;
}  // namespace

const std::string& lab_main_id() {
  return g_lab_main_id;
}

int lab_main(int argc, char** argv) {
  if (!registration_errors().empty()) {
    std::fprintf(stderr, "error: %s\n", registration_errors().front().c_str());
    return kExitLabError;
  }
  if (labs().size() != 1) {
    std::fprintf(stderr, "error: this executable should hold exactly one lab, it holds %zu\n", labs().size());
    return kExitLabError;
  }
  g_lab_main_id = labs().front().id;
  return lab_cli(labs().front(), argc, argv, labs().front().executable);
}

}  // namespace lab
