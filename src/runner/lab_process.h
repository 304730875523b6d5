// Each lab runs as its own executable (build/bin/labNN_<id>, or P/bin/ when installed), in its own process
// group, with --json and the walk's flags; the runner reads its report back (lab::Report::from_json).
// A lab that crashes, hangs on Ctrl-C or prints no report costs the walk one line, never the walk.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lab/catalog.h"
#include "lab/report.h"

namespace runner {

// A line that shows on a terminal what is being waited for ("running lab 14 fp8-scaling... 3.2 s"), once
// the wait has lasted `delay_s`, and is erased when it ends. Nothing is written unless `enabled` (standard
// output is a terminal): pipes, files and --json never see it.
class LiveLine {
 public:
  LiveLine(std::ostream& out, bool enabled, std::string text, double delay_s = 0.5);
  ~LiveLine();
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;
  void tick();   // redraws the seconds when due
  void clear();  // erases the line (once shown); tick() may show it again

 private:
  std::ostream& out_;
  bool enabled_;
  std::string text_;
  double delay_s_;
  double start_;
  size_t shown_width_ = 0;
  int shown_tenths_ = -1;
};

struct LabOutcome {
  enum class Kind {
    Report,       // it printed its report (exit 0: every check held; 1: one did not)
    Usage,        // exit 2: the flags given are bad for it (such as --device cuda without a GPU)
    Failed,       // exit 3, another code, or no readable report
    Crashed,      // killed by a signal the runner did not send
    Interrupted,  // stopped by Ctrl-C, SIGTERM or SIGHUP on the runner
    NotBuilt,     // no executable, or its build failed
  };
  Kind kind = Kind::Failed;
  std::optional<lab::Report> report;
  std::vector<std::string> notices;  // what a lab that reported said on stderr ("auto: no CUDA device ...")
  std::string message;               // one line, for every kind but Report
  int exit_code = -1;
  double seconds = 0;
};

// The folder holding the lab executables: $AMP_LAB_LAB_DIR, else the runner's own folder.
std::string lab_folder();
std::string lab_path(const lab::LabDecl& decl);

// When scripts/amp-lab builds the labs in the background ($AMP_LAB_BUILD_AHEAD names its status folder),
// waits for this lab's build with a live "building lab 05 memory-throughput... 12 s" line. nullopt: ready
// to run; otherwise why not (NotBuilt with the log's path, or Interrupted).
std::optional<LabOutcome> wait_for_build(const lab::LabDecl& decl, std::ostream& out, bool live);

// Runs the lab with --json and `flags`, showing "running lab NN id... s" on a terminal while it runs.
LabOutcome run_lab_process(const lab::LabDecl& decl, const std::vector<std::string>& flags, std::ostream& out,
                           bool live);

}  // namespace runner
