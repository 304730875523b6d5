// amp::GradScaler's process-group option (amp/distributed.h): two forked ranks on 127.0.0.1 over Gloo.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <limits>
#include <thread>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "amp/distributed.h"
#include "lab/libtorch.h"

namespace test_distributed {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kInitScale = 1024.0;
constexpr std::chrono::seconds kDeadline{60};  // the whole two-rank run; a rank that hangs fails the test

struct RankOutcome {
  int32_t stepped = -1;  // what scaler.step() returned
  float scale = 0;       // the scale after update()
  float weight = 0;      // the parameter after the step
};

// One rank: a single parameter whose gradient is 1, or inf on `inf_rank`; one scaler step.
RankOutcome one_step(int rank, int listen_fd, int port, int inf_rank, bool global_verdict) {
  at::set_num_threads(1);  // a forked child: keep clear of the parent's thread pools
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.waitWorkers = false;
  so.timeout = std::chrono::seconds(20);
  if (rank == 0) so.masterListenFd = listen_fd;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  auto pg = amp::make_gloo_group(store, rank, /*world_size=*/2);
  torch::Tensor w = torch::ones({1}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.5));
  amp::GradScalerOptions options{.init_scale = kInitScale};
  if (global_verdict) options.found_inf_reducer = amp::found_inf_all_reduce(pg);
  amp::GradScaler scaler(torch::kCPU, options);
  scaler.scale(w.sum()).backward();
  if (rank == inf_rank) w.mutable_grad().fill_(kInf);
  RankOutcome out;
  out.stepped = scaler.step(opt);
  scaler.update();
  out.scale = static_cast<float>(scaler.get_scale());
  out.weight = w.item<float>();
  std::vector<torch::Tensor> barrier{torch::zeros({1})};  // rank 0 hosts the store: nobody leaves early
  pg->allreduce(barrier)->wait(std::chrono::seconds(20));
  return out;
}

// Forks two ranks, returns each one's outcome (or fails the test on a crash, an error or the deadline).
std::vector<RankOutcome> two_ranks(int inf_rank, bool global_verdict) {
  const int fd =
      socket(AF_INET, SOCK_STREAM, 0);  // port 0: the kernel picks a free port, held open for rank 0
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 16) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);

  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int rank = 0; rank < 2; ++rank) {
    int p[2];
    REQUIRE(pipe(p) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(p[0]);
      int code = 0;
      try {
        const RankOutcome out = one_step(rank, fd, port, inf_rank, global_verdict);
        code = write(p[1], &out, sizeof out) == sizeof out ? 0 : 4;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        code = 3;
      }
      _exit(code);
    }
    close(p[1]);
    pids.push_back(pid);
    pipes.push_back(p[0]);
  }
  close(fd);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  std::vector<RankOutcome> outcomes(2);
  for (int rank = 0; rank < 2; ++rank) {
    int status = 0;
    while (waitpid(pids[rank], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t pid : pids) kill(pid, SIGKILL);
        for (pid_t pid : pids) waitpid(pid, nullptr, 0);
        FAIL("the ranks did not finish within " << kDeadline.count() << " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "rank " << rank << " failed");
    CHECK(read(pipes[rank], &outcomes[rank], sizeof(RankOutcome)) == sizeof(RankOutcome));
    close(pipes[rank]);
  }
  return outcomes;
}

}  // namespace

TEST_CASE("with the process group, an inf on one rank makes both ranks skip and back off") {
  const auto out = two_ranks(/*inf_rank=*/1, /*global_verdict=*/true);
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    CHECK(out[rank].stepped == 0);
    CHECK(out[rank].scale == doctest::Approx(kInitScale * 0.5));
    CHECK(out[rank].weight == doctest::Approx(1.0));
  }
}

TEST_CASE("without the process group, only the rank that saw the inf skips, and the scales part ways") {
  const auto out = two_ranks(/*inf_rank=*/1, /*global_verdict=*/false);
  CHECK(out[0].stepped == 1);
  CHECK(out[0].weight == doctest::Approx(0.5));  // 1 - lr * 1
  CHECK(out[0].scale == doctest::Approx(kInitScale));
  CHECK(out[1].stepped == 0);
  CHECK(out[1].scale == doctest::Approx(kInitScale * 0.5));
}

TEST_CASE("with the process group and no inf anywhere, both ranks step") {
  const auto out = two_ranks(/*inf_rank=*/-1, /*global_verdict=*/true);
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    CHECK(out[rank].stepped == 1);
    CHECK(out[rank].weight == doctest::Approx(0.5));
    CHECK(out[rank].scale == doctest::Approx(kInitScale));
  }
}

TEST_CASE("NCCL is built only against a CUDA LibTorch with its headers, and otherwise says so in one line") {
  if (amp::nccl_built()) {
    MESSAGE("this build has NCCL: a group needs a GPU per rank (lab 13 runs one on such a machine)");
    return;
  }
  auto store = c10::make_intrusive<c10d::HashStore>();
  CHECK_THROWS_WITH_AS(amp::make_nccl_group(store, 0, 1), doctest::Contains("has no NCCL"),
                       std::runtime_error);
}

}  // namespace test_distributed
