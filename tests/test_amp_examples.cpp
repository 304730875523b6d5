// Every lab's amp.cpp is safe to copy alone into a project: each of its functions that steps through a
// amp::GradScaler receives or builds that scaler, and what the step's correctness depends on beyond it is
// received or built in amp.cpp too, not left to the lab.cpp around it:
//   - a function that steps on sharded gradients (it receives a c10d process group) needs a scaler whose
//     found_inf is all-reduced over that group: amp.cpp builds it (a function receiving the group that sets
//     found_inf_reducer = amp::found_inf_all_reduce(...)), and lab.cpp builds no reducer of its own;
//   - stochastic rounding draws from a generator the function receives (or from a seed it receives);
//   - an amp::Bf16Step is given a seed the function receives.
// Reads the files; no LibTorch. The rules are also run on a copy of lab 16's amp.cpp as it was before its
// scaler moved into it, which they refuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "amp_lab_paths.h"

namespace test_amp_examples {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), p.string() << " cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Function {
  std::string name, params, body;
};

// The function definitions at namespace scope of a clang-formatted file: a signature starting in the first
// column, up to the '{' that ends it, and the body up to the '}' in the first column.
std::vector<Function> functions_of(const std::string& text) {
  std::vector<Function> out;
  static const std::regex head(R"(^[A-Za-z][\w:<>,&* ]*?\b(\w+)\(([^;{]*)\)\s*(const\s*)?\{)");
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty() || !std::isalpha(static_cast<unsigned char>(lines[i][0])) ||
        lines[i].rfind("namespace", 0) == 0)
      continue;
    std::string signature = lines[i];
    size_t j = i;
    while (signature.find('{') == std::string::npos && signature.find(';') == std::string::npos &&
           j + 1 < lines.size() && j - i < 8)
      signature += " " + lines[++j];
    std::smatch m;
    if (!std::regex_search(signature, m, head)) continue;
    Function f{m[1], m[2], ""};
    for (size_t k = j + 1; k < lines.size() && lines[k].rfind('}', 0) != 0; ++k) f.body += lines[k] + "\n";
    out.push_back(f);
    i = j;
  }
  return out;
}

std::set<std::string> names_declared(const std::string& text, const std::string& type_regex) {
  std::set<std::string> names;
  const std::regex decl(type_regex + R"(\s*&?\s+(\w+))");
  for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

// What is wrong with `amp_cpp` (and the lab.cpp beside it) by the rules above; empty when nothing is.
std::vector<std::string> problems(const std::string& amp_cpp, const std::string& lab_cpp) {
  std::vector<std::string> found;
  const std::vector<Function> fns = functions_of(amp_cpp);
  bool builds_reducer = false;  // some function receives a group and builds a scaler with its reducer
  for (const Function& f : fns) {
    if (f.params.find("c10d::Backend") != std::string::npos &&
        f.body.find("found_inf_reducer = amp::found_inf_all_reduce(") != std::string::npos)
      builds_reducer = true;
  }
  for (const Function& f : fns) {
    const std::set<std::string> received = names_declared(f.params, R"(amp::GradScaler)");
    const std::set<std::string> built = names_declared(f.body, R"(amp::GradScaler)");
    const std::regex step_call(R"((\w+)\.step\()");
    for (std::sregex_iterator it(f.body.begin(), f.body.end(), step_call), end; it != end; ++it) {
      const std::string who = (*it)[1];
      if (who.find("scaler") == std::string::npos) continue;  // an optimizer's own step
      if (!received.count(who) && !built.count(who))
        found.push_back(f.name + " steps through " + who + ", which it neither receives nor builds");
      const bool sharded = f.params.find("c10d::Backend") != std::string::npos;
      if (sharded && !builds_reducer)
        found.push_back(f.name + " steps sharded gradients (it receives a process group) through " + who +
                        ", but no function of amp.cpp builds the scaler's found_inf reducer over that group");
      if (sharded && lab_cpp.find("amp::found_inf_all_reduce(") != std::string::npos)
        found.push_back("lab.cpp builds the found_inf reducer that " + f.name + "'s correctness depends on");
    }
    const std::regex rounding(R"(amp::stochastic_round_(add_)?\(([^;]*)\);)");
    for (std::sregex_iterator it(f.body.begin(), f.body.end(), rounding), end; it != end; ++it) {
      const std::string args = (*it)[2];
      const std::string last = args.substr(args.rfind(',') == std::string::npos ? 0 : args.rfind(',') + 1);
      const std::regex word(R"(\w+)");
      std::smatch g;
      if (std::count(args.begin(), args.end(), ',') < 2 || !std::regex_search(last, g, word) ||
          f.params.find(g.str()) == std::string::npos)
        found.push_back(f.name + " rounds stochastically without a generator it receives");
    }
    if (f.body.find("amp::Bf16Step ") != std::string::npos) {
      std::smatch s;
      const std::regex seed(R"(\.seed\s*=\s*(\w+))");
      if (!std::regex_search(f.body, s, seed) || f.params.find(s[1].str()) == std::string::npos)
        found.push_back(f.name + " builds an amp::Bf16Step without a seed it receives");
    }
  }
  return found;
}

}  // namespace

TEST_CASE(
    "every amp.cpp function that steps through a scaler receives or builds what its correctness needs") {
  int files = 0, stepping = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(AMP_LAB_SOURCE_DIR) / "labs")) {
    const fs::path amp_cpp = entry.path() / "amp.cpp";
    if (!fs::exists(amp_cpp)) continue;
    ++files;
    const std::string text = read(amp_cpp);
    for (const Function& f : functions_of(text))
      if (std::regex_search(f.body, std::regex(R"(\w*scaler\w*\.step\()"))) ++stepping;
    CAPTURE(amp_cpp.string());
    const std::vector<std::string> found = problems(text, read(entry.path() / "lab.cpp"));
    for (const std::string& p : found) FAIL_CHECK(p);
  }
  CHECK(files >= 17);
  CHECK(stepping >= 8);  // the rules did meet the scalers' steps (labs 02, 06, 09, 10, 11, 13, 15, 16)
}

TEST_CASE("the rules refuse lab 16's amp.cpp as it was, with the sharded scaler's reducer built in lab.cpp") {
  const std::string old_amp = R"(namespace lab16 {

torch::Tensor clip_and_step(torch::optim::Optimizer& opt, amp::GradScaler& scaler,
                            const std::vector<torch::Tensor>& shard, double max_norm,
                            const c10::intrusive_ptr<c10d::Backend>& group) {
  scaler.unscale_(opt);
  torch::Tensor norm = amp::clip_grad_norm_sharded(shard, max_norm, group);
  scaler.step(opt);
  scaler.update();
  return norm;
}

}  // namespace lab16
)";
  const std::string old_lab =
      "  amp::GradScaler scaler(r.device, {.process_group = amp::found_inf_all_reduce(pg)});\n";
  const std::vector<std::string> found = problems(old_amp, old_lab);
  REQUIRE(found.size() == 2);
  CHECK(found[0].find("no function of amp.cpp builds the scaler's found_inf reducer") != std::string::npos);
  CHECK(found[1].find("lab.cpp builds the found_inf reducer") != std::string::npos);
  // A generator made inside the function, and a Bf16Step with a seed of its own, are refused too.
  const std::string reseeding = R"(void stochastic_update(torch::Tensor& w, const torch::Tensor& u) {
  amp::stochastic_round_add_(w, u, at::make_generator<at::CPUGeneratorImpl>(0));
}
torch::Tensor train(torch::nn::Linear& model) {
  amp::Bf16StepOptions options;
  options.seed = 0;
  amp::Bf16Step opt(model->parameters(), make, options);
}
)";
  CHECK(problems(reseeding, "").size() == 2);
}

}  // namespace test_amp_examples
