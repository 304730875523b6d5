// Lab 13 (data-parallel, Q13): two ranks on 127.0.0.1 over c10d Gloo; sharded gradients need the global verdict.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include <torch/torch.h>

#include "lab_test_support.h"

namespace {

lab::Report run_quick(bool flip) { return run_quick_lab("data-parallel", torch::kBFloat16, flip); }

// No rank process is left behind: this process has no children, running or unreaped.
bool no_children_left() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

// Sets the lab's fault hook for one run.
struct Fault {
  explicit Fault(const char* what) { setenv("AMP_LAB_DATA_PARALLEL_FAULT", what, 1); }
  ~Fault() { unsetenv("AMP_LAB_DATA_PARALLEL_FAULT"); }
};

}  // namespace

TEST_CASE("two ranks: ddp replicas agree bitwise, sharded ranks drift without a global verdict and agree with one") {
  const lab::Report r = run_quick(/*flip=*/false);
  CHECK(r.passed());
  CHECK(r.value("ddp_skipped") >= 1);
  CHECK(r.value("local_disagree_steps") >= 1);
  CHECK(r.value("local_drift") > 0);
  CHECK(r.value("global_disagree_steps") == 0);
  CHECK(r.value("global_drift") == 0);
  CHECK(no_children_left());
}

TEST_CASE("flipped, found_inf is not all-reduced and the sharded-global check fails") {
  const lab::Report r = run_quick(/*flip=*/true);
  CHECK_FALSE(r.passed());
  CHECK_FALSE(check_about(r, "with the process-group option").passed);
  CHECK(check_about(r, "ddp:").passed);
  CHECK(r.value("global_disagree_steps") >= 1);
  CHECK(r.value("global_drift") > 0);
}

TEST_CASE("a rank that dies ends the run with a clear error and leaves no process behind") {
  const Fault fault("die:1");
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_quick(/*flip=*/false), doctest::Contains("rank 1 of 2 was killed by signal 9"), std::runtime_error);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  CHECK(no_children_left());
}

TEST_CASE("a rank that hangs makes the other's collective time out, and the run ends with a clear error") {
  const Fault fault("hang:1");
  CHECK_THROWS_WITH_AS(run_quick(/*flip=*/false), doctest::Contains("rank 0 of 2 failed"), std::runtime_error);
  CHECK(no_children_left());
}
