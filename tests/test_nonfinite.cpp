// amp::NonfiniteWatch: the op that first made an inf or NaN, forward and backward, on the CPU.
#include <doctest/doctest.h>

#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <ATen/record_function.h>

#include "amp/autocast.h"
#include "amp/nonfinite.h"
#include "doctest_torch.h"
#include "lab/libtorch.h"

namespace test_nonfinite {

namespace {

using torch::kCPU;

// A seeded fp32 MLP's one SGD step under bf16 autocast; returns the parameters after it.
std::vector<torch::Tensor> one_step() {
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  const torch::Tensor x = torch::randn({32, 8});
  const torch::Tensor y = torch::randn({32, 4});
  torch::Tensor loss;
  {
    amp::Autocast ac(kCPU, torch::kBFloat16);
    loss = torch::mse_loss(model->forward(x).to(torch::kFloat), y);
  }
  opt.zero_grad();
  loss.backward();
  opt.step();
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

// The threads that ran an autograd node, seen by a thread-local RecordFunction callback as the watch's.
std::mutex g_threads_mutex;
std::set<std::thread::id> g_backward_threads;

std::unique_ptr<at::ObserverContext> note_thread(const at::RecordFunction&) {
  std::lock_guard<std::mutex> lock(g_threads_mutex);
  g_backward_threads.insert(std::this_thread::get_id());
  return nullptr;
}

}  // namespace

TEST_CASE("CPU backward runs its autograd nodes on the calling thread, where the watch's callback is") {
  const torch::Tensor x = torch::randn({8}).requires_grad_();
  at::RecordFunctionCallback cb(&note_thread);
  cb.scopes({at::RecordScope::BACKWARD_FUNCTION});
  const at::CallbackHandle handle = at::addThreadLocalCallback(std::move(cb));
  (torch::exp(x) * x).sum().backward();
  at::removeCallback(handle);
  std::lock_guard<std::mutex> lock(g_threads_mutex);
  REQUIRE_FALSE(g_backward_threads.empty());
  CHECK(g_backward_threads == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("an fp16 overflow in exp is named as aten::exp, not the add and mul the inf flows through") {
  amp::NonfiniteWatch watch;
  const torch::Tensor x = torch::full({4}, 12.0).to(torch::kHalf);  // 12 is exact in fp16
  const torch::Tensor e = torch::exp(x);                            // e^12 = 162755 > 65504: inf
  const torch::Tensor z = (e + 1) * 2;
  REQUIRE(torch::isinf(z).all().item<bool>());
  const auto first = watch.first();
  REQUIRE(first.has_value());
  CHECK(first->op == "aten::exp");
  CHECK(dtype_name(first->dtype) == "Half");
  CHECK(first->has_inf);
  CHECK_FALSE(first->has_nan);
  CHECK(first->phase == "forward");
  CHECK(first->inputs == "Half[4]");
  CHECK(first->within == "");
  CHECK(watch.producers().size() == 1);  // the add and the mul had an inf input
  CHECK(watch.ops_seen() >= 4);
}

TEST_CASE("under fp16 autocast the op whose matmul result exceeds 65504 is named and recomputed") {
  torch::manual_seed(3);
  const torch::Tensor a = torch::full({2, 4}, 300.0);  // each dot product: 4 * 300 * 300 = 360000
  const torch::Tensor b = torch::full({4, 3}, 300.0);
  amp::NonfiniteWatch watch;
  torch::Tensor c;
  {
    amp::Autocast ac(kCPU, torch::kHalf);
    c = torch::matmul(a, b);
  }
  REQUIRE(dtype_of(c) == "Half");
  const auto first = watch.first();
  REQUIRE(first.has_value());
  MESSAGE("recorded: " << first->op << " within '" << first->within << "' inputs " << first->inputs);
  const std::set<std::string> matmuls{"aten::mm", "aten::addmm", "aten::linear", "aten::matmul"};
  CHECK(matmuls.count(first->op) == 1);
  CHECK(dtype_name(first->dtype) == "Half");
  CHECK(first->has_inf);
  CHECK(first->inputs == "Half[2, 4], Half[4, 3]");  // the autocast casts (300 fits fp16) made no inf
  CHECK(watch.producers().size() == 1);
  // Independently: the same product in fp16 overflows, in float64 it is 360000.
  const torch::Tensor half = torch::mm(a.to(torch::kHalf), b.to(torch::kHalf));
  const torch::Tensor exact = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
  CHECK(torch::isinf(half).all().item<bool>());
  CHECK(exact.max().item<double>() == 360000.0);
  CHECK(exact.min().item<double>() > 65504.0);
}

TEST_CASE("a finite forward and backward records nothing") {
  amp::NonfiniteWatch watch;
  const std::vector<torch::Tensor> params = one_step();
  for (const auto& p : params) REQUIRE(torch::isfinite(p).all().item<bool>());
  CHECK_FALSE(watch.first().has_value());
  CHECK(watch.producers().empty());
  CHECK(watch.ops_seen() > 50);
}

TEST_CASE("a NaN from inf times 0 is attributed to the op that made the inf from finite inputs") {
  amp::NonfiniteWatch watch;
  const torch::Tensor x = torch::full({3}, 100.0);
  const torch::Tensor e = torch::exp(x);  // fp32: e^100 = 2.7e43 > 3.4e38, inf
  const torch::Tensor n = e * 0.0;        // NaN, from an inf input: not a producer
  const torch::Tensor d = n - (e - e);    // inf - inf: NaN again, still not a producer
  REQUIRE(torch::isnan(d).all().item<bool>());
  const auto all = watch.producers();
  REQUIRE(all.size() == 1);
  CHECK(all[0].op == "aten::exp");
  CHECK(dtype_name(all[0].dtype) == "Float");
  CHECK(all[0].has_inf);
  CHECK_FALSE(all[0].has_nan);
}

TEST_CASE("an argument the op only writes does not count as an input, an in-place op's self does") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  torch::Tensor out = torch::full({3}, nan);
  torch::Tensor half = torch::full({3}, nan).to(torch::kHalf);
  torch::Tensor inf = torch::full({3}, std::numeric_limits<float>::infinity());
  const torch::Tensor big = torch::full({3}, 1e5);  // 1e5 > 65504
  const torch::Tensor hundred = torch::full({3}, 100.0);
  amp::NonfiniteWatch watch;
  torch::exp_out(out, hundred);  // the NaN in out= is overwritten: exp made the inf
  half.copy_(big);               // copy_ into fp16 made the inf, over the NaN that was there
  inf.add_(1.0);                 // its self was already inf: not a producer
  const auto all = watch.producers();
  REQUIRE(all.size() == 2);
  CHECK(all[0].op == "aten::exp");
  CHECK(dtype_name(all[0].dtype) == "Float");
  CHECK(all[0].inputs == "Float[3], Float[3]");  // self, and out= (listed, not checked)
  CHECK(all[1].op == "aten::copy_");
  CHECK(dtype_name(all[1].dtype) == "Half");
  CHECK(all[1].inputs == "Half[3], Float[3]");
  CHECK(all[1].has_inf);
  CHECK_FALSE(all[1].has_nan);
}

TEST_CASE("a NaN made from finite inputs is named with has_nan and its sequence among the ops") {
  amp::NonfiniteWatch watch;
  const torch::Tensor x = torch::tensor({1.0, -1.0});
  const torch::Tensor y = torch::sqrt(x);  // sqrt(-1): NaN
  const torch::Tensor z = y + x;
  const auto first = watch.first();
  REQUIRE(first.has_value());
  CHECK(first->op == "aten::sqrt");
  CHECK(first->has_nan);
  CHECK_FALSE(first->has_inf);
  CHECK(first->sequence < watch.ops_seen() - 1);  // the add came after it
  CHECK(watch.producers().size() == 1);
}

TEST_CASE("a gradient that overflows fp16 only in the backward is recorded in phase backward") {
  const torch::Tensor x = torch::full({4}, 1e-3, torch::kHalf).requires_grad_();
  amp::NonfiniteWatch watch;
  const torch::Tensor y = x * 100.0;              // 0.1
  const torch::Tensor scaled = y.sum() * 1000.0;  // 400: a scaled loss, finite
  REQUIRE(torch::isfinite(scaled).item<bool>());
  REQUIRE_FALSE(watch.first().has_value());  // the forward is finite
  scaled.backward();                         // d scaled / dx = 1000 * 100 = 1e5 > 65504: inf in fp16
  REQUIRE(torch::isinf(x.grad()).all().item<bool>());
  const auto first = watch.first();
  REQUIRE(first.has_value());
  MESSAGE("recorded: " << first->op << " within '" << first->within << "' forward " << first->forward_op);
  CHECK(first->phase == "backward");
  CHECK(first->op == "aten::mul");
  CHECK(dtype_name(first->dtype) == "Half");
  CHECK(first->has_inf);
  // Inside the engine's range and the node of `y.sum() * 1000.0` (mul by a Scalar), the aten::mul it calls.
  CHECK(first->within.find("MulBackward1 > aten::mul") != std::string::npos);
  CHECK(first->forward_op == "aten::mul");
  CHECK(watch.producers().size() == 1);
}

TEST_CASE("the watch removes its callback when it dies, also when unwinding, and refuses to nest") {
  REQUIRE_FALSE(at::hasThreadLocalCallbacks());
  {
    amp::NonfiniteWatch watch;
    CHECK(at::hasThreadLocalCallbacks());
    CHECK_THROWS_AS(amp::NonfiniteWatch{}, amp::NonfiniteWatchError);
  }
  CHECK_FALSE(at::hasThreadLocalCallbacks());
  CHECK_THROWS_AS(amp::find_nonfinite([] {
                    (void)torch::exp(torch::full({2}, 100.0));
                    throw std::runtime_error("unwinding");
                  }),
                  std::runtime_error);
  CHECK_FALSE(at::hasThreadLocalCallbacks());
  // Nothing of the dead watches leaks into a new one.
  amp::NonfiniteWatch again;
  CHECK(again.ops_seen() == 0);
  CHECK_FALSE(again.first().has_value());
}

TEST_CASE("find_nonfinite returns the first producer of the callable") {
  const auto found = amp::find_nonfinite([] { (void)(torch::full({2}, 1e30) * 1e30); });
  REQUIRE(found.has_value());
  CHECK(found->op == "aten::mul");
  CHECK(found->has_inf);
}

TEST_CASE("a training step gives bitwise the same parameters with and without the watch") {
  const std::vector<torch::Tensor> plain = one_step();
  std::vector<torch::Tensor> watched;
  {
    amp::NonfiniteWatch watch;
    watched = one_step();
    CHECK_FALSE(watch.first().has_value());
  }
  REQUIRE(plain.size() == watched.size());
  for (size_t i = 0; i < plain.size(); ++i) CHECK(torch::equal(plain[i], watched[i]));
}

}  // namespace test_nonfinite
