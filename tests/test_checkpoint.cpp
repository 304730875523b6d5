// amp::save_checkpoint and amp::load_checkpoint: one file holds model, optimizer and scaler and resumes a
// run identically; a checkpoint that does not fit the model, the optimizer or the scaler changes nothing; a
// save that cannot be written (a full disk, a file-size limit, a missing folder) throws one line and leaves
// the previous file as it was.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "amp/checkpoint.h"
#include "amp/grad_scaler.h"
#include "doctest_torch.h"
#include "lab/libtorch.h"
#include "support/folder.h"
#include "support/training_problem.h"

namespace test_checkpoint {

namespace {

const torch::Device kCpu(torch::kCPU);

using test_support::Folder;
using test_support::FullDisk;
using test_support::Problem;
using test_support::train_step;

}  // namespace

TEST_CASE("one checkpoint file holds model, optimizer and scaler, and resumes identically") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint.pt").string();
  Problem a, b(/*seed=*/99);  // b starts from other weights and is overwritten by the checkpoint
  amp::GradScaler sa(kCpu, {.init_scale = 32.0, .growth_interval = 2});
  amp::GradScaler sb(kCpu);
  for (int i = 0; i < 3; ++i) train_step(a, sa);
  amp::save_checkpoint(path, *a.model, a.opt, sa);
  b.x = a.x, b.y = a.y;
  amp::load_checkpoint(path, *b.model, b.opt, sb);
  std::filesystem::remove(path);
  CHECK(sb.get_scale() == sa.get_scale());
  CHECK(sb.state_dict().growth_tracker == sa.state_dict().growth_tracker);
  for (int i = 0; i < 4; ++i) {
    train_step(a, sa);
    train_step(b, sb);
  }
  CHECK(torch::equal(a.flat_params(), b.flat_params()));
  CHECK(sa.get_scale() == sb.get_scale());
}

TEST_CASE("a checkpoint whose scaler state does not fit changes nothing: model, optimizer and scaler") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint_bad.pt").string();
  Problem a, b(/*seed=*/99);
  amp::GradScaler disabled(kCpu, {.enabled = false});
  for (int i = 0; i < 2; ++i) train_step(a, disabled);
  amp::save_checkpoint(path, *a.model, a.opt, disabled);  // its scaler state is empty
  amp::GradScaler sb(kCpu, {.init_scale = 32.0, .growth_interval = 3});
  train_step(b, sb);
  const auto params_before = b.flat_params().clone();
  torch::serialize::OutputArchive opt_before;
  b.opt.save(opt_before);
  CHECK_THROWS_WITH_AS(amp::load_checkpoint(path, *b.model, b.opt, sb),
                       doctest::Contains("The source state dict is empty"), amp::GradScalerError);
  CHECK(torch::equal(b.flat_params(), params_before));
  CHECK(sb.get_scale() == 32.0);
  CHECK(sb.state_dict().growth_tracker == 1);
  // The optimizer kept its momentum: b's next step equals that of a twin that never saw the checkpoint.
  Problem twin(/*seed=*/99);
  amp::GradScaler st(kCpu, {.init_scale = 32.0, .growth_interval = 3});
  train_step(twin, st);
  train_step(twin, st);
  train_step(b, sb);
  CHECK(torch::equal(b.flat_params(), twin.flat_params()));
  std::filesystem::remove(path);
}

TEST_CASE("a checkpoint whose optimizer state does not fit leaves the optimizer and model as they were") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint_opt.pt").string();
  Problem a;
  torch::optim::Adam adam(a.model->parameters(), torch::optim::AdamOptions(1e-3));
  amp::GradScaler sa(kCpu, {.init_scale = 8.0});
  adam.zero_grad();
  sa.scale(a.loss()).backward();
  sa.step(adam);
  sa.update();
  amp::save_checkpoint(path, *a.model, adam, sa);  // same model shapes, an Adam state
  Problem b(/*seed=*/99), twin(/*seed=*/99);
  amp::GradScaler sb(kCpu, {.init_scale = 32.0}), st(kCpu, {.init_scale = 32.0});
  train_step(b, sb);
  train_step(twin, st);
  const auto params_before = b.flat_params().clone();
  CHECK_THROWS_WITH_AS(amp::load_checkpoint(path, *b.model, b.opt, sb),
                       doctest::Contains("the optimizer state does not fit"), amp::CheckpointError);
  CHECK(torch::equal(b.flat_params(), params_before));
  CHECK(sb.get_scale() == 32.0);
  train_step(b, sb);
  train_step(twin, st);
  CHECK(torch::equal(b.flat_params(), twin.flat_params()));  // SGD momentum restored as it was
  std::filesystem::remove(path);
}

TEST_CASE("a checkpoint whose second param group does not fit leaves the first group as it was too") {
  // The optimizer's load applies group 0 (state, options) before it finds group 1 does not fit.
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint_groups.pt").string();
  Problem a, b(/*seed=*/99);
  auto pa = a.model->parameters(), pb = b.model->parameters();
  REQUIRE(pa.size() == 4);
  torch::optim::SGD src(
      {torch::optim::OptimizerParamGroup({pa[0], pa[1]}), torch::optim::OptimizerParamGroup({pa[2], pa[3]})},
      torch::optim::SGDOptions(0.5).momentum(0.9));
  amp::GradScaler sa(kCpu, {.init_scale = 8.0});
  src.zero_grad();
  sa.scale(a.loss()).backward();
  sa.step(src);
  sa.update();
  amp::save_checkpoint(path, *a.model, src, sa);
  torch::optim::SGD dst(
      {torch::optim::OptimizerParamGroup({pb[0], pb[1]}), torch::optim::OptimizerParamGroup({pb[2]})},
      torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler sb(kCpu);
  REQUIRE(dst.state().empty());
  CHECK_THROWS_WITH_AS(amp::load_checkpoint(path, *b.model, dst, sb),
                       doctest::Contains("the optimizer state does not fit"), amp::CheckpointError);
  std::filesystem::remove(path);
  CHECK(dst.param_groups()[0].options().get_lr() == doctest::Approx(0.05));
  CHECK(dst.state().empty());
}

TEST_CASE("a checkpoint of another model shape is refused before anything is loaded") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint_shape.pt").string();
  torch::manual_seed(3);
  torch::nn::Sequential other(torch::nn::Linear(4, 5), torch::nn::ReLU(), torch::nn::Linear(5, 2));
  torch::optim::SGD other_opt(other->parameters(), torch::optim::SGDOptions(0.1));
  amp::GradScaler other_scaler(kCpu, {.init_scale = 2.0});
  amp::save_checkpoint(path, *other, other_opt, other_scaler);
  Problem b;
  amp::GradScaler sb(kCpu, {.init_scale = 32.0});
  train_step(b, sb);
  const auto params_before = b.flat_params().clone();
  CHECK_THROWS_WITH_AS(amp::load_checkpoint(path, *b.model, b.opt, sb),
                       doctest::Contains("model entry '0.weight'"), amp::CheckpointError);
  CHECK(torch::equal(b.flat_params(), params_before));
  CHECK(sb.get_scale() == 32.0);
  CHECK_THROWS_AS(amp::load_checkpoint(path + ".absent", *b.model, b.opt, sb), amp::CheckpointError);
  std::filesystem::remove(path);
}

TEST_CASE("load_checkpoint maps every tensor onto the device asked for, like map_location") {
  const auto path = (std::filesystem::temp_directory_path() / "amp_lab_test_checkpoint_map.pt").string();
  Problem a, b(/*seed=*/99);
  amp::GradScaler sa(kCpu, {.init_scale = 32.0}), sb(kCpu);
  train_step(a, sa);
  amp::save_checkpoint(path, *a.model, a.opt, sa);
  b.x = a.x, b.y = a.y;
  amp::load_checkpoint(path, *b.model, b.opt, sb, /*map_location=*/torch::Device(torch::kCPU));
  std::filesystem::remove(path);
  for (const auto& param : b.model->parameters()) CHECK(param.device() == kCpu);
  CHECK(torch::equal(a.flat_params(), b.flat_params()));
  train_step(a, sa);
  train_step(b, sb);
  CHECK(torch::equal(a.flat_params(), b.flat_params()));
}

namespace {

// Files written by this process are limited to `bytes` while it lives (RLIMIT_FSIZE, as `ulimit -f` does;
// no privilege needed); SIGXFSZ is ignored, so a write past the limit fails with EFBIG instead of killing
// us.
struct FileSizeLimit {
  rlimit before{};
  struct sigaction old_action{};
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
    struct sigaction ignore{};
    ignore.sa_handler = SIG_IGN;
    REQUIRE(::sigaction(SIGXFSZ, &ignore, &old_action) == 0);
    const rlimit limited{bytes, before.rlim_max};
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before);
    ::sigaction(SIGXFSZ, &old_action, nullptr);
  }
};

// A model whose checkpoint (weights and momentum buffers, about 70 KB) fits neither limit above.
struct BigProblem {
  torch::nn::Linear model{96, 96};
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)};
  amp::GradScaler scaler{kCpu, {.init_scale = 256.0}};
  BigProblem() {
    opt.zero_grad();
    scaler.scale(model->forward(torch::randn({4, 96})).pow(2).sum()).backward();
    scaler.step(opt);
    scaler.update();
  }
  void save(const std::filesystem::path& p) { amp::save_checkpoint(p.string(), *model, opt, scaler); }
};

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What save_checkpoint threw (its type and one-line message), for a failure expected.
std::string save_error(BigProblem& big, const std::filesystem::path& p) {
  try {
    big.save(p);
  } catch (const amp::CheckpointError& e) {
    return e.what();
  }
  return "(no CheckpointError)";
}

}  // namespace

TEST_CASE("a checkpoint on a full disk throws one line naming the path and the cause, and leaves no file") {
  FullDisk full;
  if (!full.mounted) {
    std::cout << "SKIPPED: " << full.why_not << "; the file-size-limit test covers the same failure\n";
    return;
  }
  BigProblem big;
  {
    Folder roomy("amp_lab_test_ckpt");
    big.save(roomy.path / "ckpt.pt");
    REQUIRE(std::filesystem::file_size(roomy.path / "ckpt.pt") > 8192);  // it really does not fit
  }
  const auto target = full.folder.path / "ckpt.pt";
  const std::string message = save_error(big, target);
  CHECK(message == "amp::checkpoint: cannot write " + target.string() + ": No space left on device");
  CHECK(full.folder.entries().empty());  // neither the checkpoint nor a temporary file

  // A previous checkpoint at the path survives a failed save unchanged.
  std::ofstream(target, std::ios::binary) << "the previous checkpoint";
  CHECK(save_error(big, target) == message);
  CHECK(read_all(target) == "the previous checkpoint");
  CHECK(full.folder.entries() == std::vector<std::string>{"ckpt.pt"});
}

TEST_CASE("a checkpoint past the file-size limit throws one line with the cause, and the old file stays") {
  Folder folder("amp_lab_test_ckpt");
  BigProblem big;
  const auto target = folder.path / "ckpt.pt";
  std::string message, kept;
  {
    FileSizeLimit limit(16384);
    message = save_error(big, target);
    std::ofstream(target, std::ios::binary) << "the previous checkpoint";
    CHECK(save_error(big, target) == message);
    kept = read_all(target);
  }
  CHECK(message == "amp::checkpoint: cannot write " + target.string() + ": File too large");
  CHECK(message.find('\n') == std::string::npos);
  CHECK(kept == "the previous checkpoint");
  CHECK(folder.entries() == std::vector<std::string>{"ckpt.pt"});
  // Without the limit the same save succeeds, replaces the old file, and loads back.
  big.save(target);
  CHECK(folder.entries() == std::vector<std::string>{"ckpt.pt"});
  BigProblem other;
  amp::load_checkpoint(target.string(), *other.model, other.opt, other.scaler);
  CHECK(torch::equal(other.model->weight, big.model->weight));
}

TEST_CASE("a checkpoint into a folder that does not exist throws one line naming the path") {
  Folder folder("amp_lab_test_ckpt");
  BigProblem big;
  const auto target = folder.path / "missing" / "ckpt.pt";
  CHECK(save_error(big, target) ==
        "amp::checkpoint: cannot write " + target.string() + ": No such file or directory");
}

}  // namespace test_checkpoint
