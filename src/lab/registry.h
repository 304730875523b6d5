// The lab linked into an executable (or a test), and how it runs. A lab file ends with one line:
//
//   AMP_LAB(measure, report);
//
// where `Result measure(const lab::Context&)` runs the experiment and returns plain numbers and tensors,
// and `void report(const Result&, lab::Report&)` turns them into the report. Which lab the file is comes
// from its folder (labs/06_amp_api/lab.cpp is lab 6) and its declaration in labs/catalog.cpp: id, title
// and heading are written there only.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/catalog.h"
#include "lab/context.h"
#include "lab/report.h"

namespace lab {

using LabFn = std::function<void(const Context&, Report&)>;

struct LabInfo {
  const LabDecl* decl = nullptr;
  // Copied from the declaration, for brevity at the call sites.
  std::string id;    // "master-weights"
  int question = 0;  // the quiz question it backs
  std::string title;
  std::string heading;     // neutral: what is measured, not what it proves
  std::string source;      // "labs/01_master_weights/lab.cpp"
  std::string executable;  // "lab01_master_weights"
  LabFn fn;
};

// Every lab linked in, ordered by number.
const std::vector<LabInfo>& labs();
// By any name find_decl() accepts, among the labs linked in.
const LabInfo* find_lab(std::string_view name);
// Registration problems (a lab file without a declaration), reported by lab_main() and the tests.
const std::vector<std::string>& registration_errors();

struct Registrar {
  Registrar(const char* file, LabFn fn);
  // A lab declared elsewhere than labs/catalog.cpp: the framework's own tests.
  Registrar(const LabDecl& decl, const char* file, LabFn fn);
};

template <class Measure, class ReportFn>
LabFn make_lab_fn(Measure measure, ReportFn report) {
  return [measure, report](const Context& ctx, Report& r) { report(measure(ctx), r); };
}

// Runs a lab: seeds torch, measures, reports, and fills the header (device, seed, mode) and the elapsed
// time. Which keys the report holds is the lab's: tests/test_labs.cpp checks them against what quiz.yaml
// and exercises.yaml name.
Report run_lab(const LabInfo& info, const Context& ctx);

}  // namespace lab

#define AMP_LAB_CONCAT_(a, b) a##b
#define AMP_LAB_CONCAT(a, b) AMP_LAB_CONCAT_(a, b)
#define AMP_LAB(measure, report)                                              \
  static const ::lab::Registrar AMP_LAB_CONCAT(amp_lab_registrar_, __LINE__)( \
      __FILE__, ::lab::make_lab_fn(measure, report))
// A lab still written as one `lab::Report run(const lab::Context&)`.
#define AMP_LAB_RUN(run)                                                      \
  static const ::lab::Registrar AMP_LAB_CONCAT(amp_lab_registrar_, __LINE__)( \
      __FILE__, [](const ::lab::Context& ctx, ::lab::Report& r) { r = run(ctx); })
