// The list of labs. A lab file registers itself with one line:
//
//   AMP_LAB_REGISTER("master-weights", /*question=*/1, "FP32 master weights keep tiny updates",
//                    /*heading=*/"Tiny updates to weights stored in 16 bits and in FP32", run,
//                    /*provides=*/{"lost_share_16bit", "final_loss_ratio"});
//
// The title states what the lab shows (the answer); the heading poses the experiment without the
// conclusion, for the quiz to show before the learner answers.
// `provides` names the observations the quiz may cite; quiz.yaml is checked against it on load, and a
// test runs every lab to make sure each promised observation is really reported.
// and labs/CMakeLists.txt gets one `amp_lab_add_lab(01_master_weights)` line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lab/context.h"
#include "lab/report.h"

namespace lab {

using LabFn = Report (*)(const Context&);

struct LabInfo {
  std::string id;          // "master-weights"
  int question = 0;        // the quiz question it backs, 1..8
  std::string title;
  std::string heading;     // neutral: what is measured, not what it proves
  std::string source;      // "labs/01_master_weights.cpp"
  std::string executable;  // "lab01_master_weights"
  LabFn fn = nullptr;
  std::vector<std::string> provides;  // observation keys the quiz may cite
};

// Every registered lab, ordered by question number.
const std::vector<LabInfo>& labs();
// By id ("master-weights"), executable name ("lab01_master_weights") or question number ("1").
const LabInfo* find_lab(std::string_view name);

struct Registrar {
  Registrar(std::string id, int question, std::string title, std::string heading, const char* file, LabFn fn,
            std::vector<std::string> provides = {});
};

// Runs a lab: seeds torch, fills the report header (device, seed, mode) and the elapsed time.
Report run_lab(const LabInfo& info, const Context& ctx);

}  // namespace lab

#define AMP_LAB_CONCAT_(a, b) a##b
#define AMP_LAB_CONCAT(a, b) AMP_LAB_CONCAT_(a, b)
#define AMP_LAB_REGISTER(id, question, title, heading, fn, ...)                                     \
  static const ::lab::Registrar AMP_LAB_CONCAT(amp_lab_registrar_, __LINE__) {                     \
    id, question, title, heading, __FILE__, fn __VA_OPT__(, std::vector<std::string> __VA_ARGS__) \
  }
