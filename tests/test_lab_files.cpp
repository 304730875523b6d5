// Every lab's folder as labs/README.md describes it: amp.cpp holds the AMP code a learner copies and
// nothing of the experiment around it, lab.cpp the rest, and exercise.cpp (where there is one) is amp.cpp
// with its key lines taken out. Reads the files; no LibTorch, no lab run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "amp_lab_paths.h"
#include "lab/catalog.h"

namespace test_lab_files {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), p.string() << " cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

fs::path root() {
  return AMP_LAB_SOURCE_DIR;
}

// The signatures of the definitions at namespace scope, each joined onto one line: from a line that starts
// in the first column ("bool train_step(torch::nn::Sequential& model, ...") to the one ending in '{'.
std::vector<std::string> definitions(const std::string& text) {
  std::vector<std::string> out;
  std::string open;
  for (const auto& line : lines_of(text)) {
    const bool starts = !line.empty() && line[0] != ' ' && line[0] != '}' && line[0] != '#' &&
                        line.rfind("//", 0) != 0 && line.rfind("namespace", 0) != 0;
    if (starts)
      open = line;
    else if (!open.empty())
      open += " " + line.substr(line.find_first_not_of(' '));
    if (!open.empty() && !line.empty() && (line.back() == '{' || line.back() == ';')) {
      if (line.back() == '{') out.push_back(open);
      open.clear();
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every lab is a folder of amp.h, amp.cpp and lab.cpp, and no lab is left as one file") {
  for (const lab::LabDecl& d : lab::catalog()) {
    CAPTURE(d.folder());
    for (const char* name : {"amp.h", "amp.cpp", "lab.cpp"})
      CHECK_MESSAGE(fs::is_regular_file(root() / d.folder() / name), d.folder()
                                                                         << "/" << name << " is missing");
    CHECK(d.source() == d.folder() + "/lab.cpp");
    CHECK(d.amp_source() == d.folder() + "/amp.cpp");
  }
  for (const auto& entry : fs::directory_iterator(root() / "labs"))
    if (entry.path().extension() == ".cpp")
      CHECK_MESSAGE(entry.path().filename() == "catalog.cpp", entry.path());
}

TEST_CASE("a lab's amp.cpp holds only its AMP code: short, no report, no --flip, no exercise plumbing") {
  for (const lab::LabDecl& d : lab::catalog()) {
    CAPTURE(d.amp_source());
    const std::string text = read(root() / d.amp_source());
    // As short as pytorch/examples' mnist.cpp train(): under 100 lines, the scale track's two under 150.
    const size_t limit = d.track == "scale" ? 150 : 100;
    CHECK(lines_of(text).size() < limit);
    CHECK(text.find("#include \"amp.h\"") != std::string::npos);
    // What belongs in lab.cpp: the report, its formatting, the flip, the registration, exercise macros.
    for (const char* word : {"lab::Report", "Report&", "fmt::", "flip", "AMP_LAB(", "AMP_LAB_EXERCISE",
                             "#ifndef", "[[maybe_unused]]"})
      CHECK_MESSAGE(text.find(word) == std::string::npos, d.amp_source()
                                                              << " holds '" << std::string(word) << "'");
  }
}

TEST_CASE("a lab's lab.cpp includes the amp.h its amp.cpp defines and registers the lab last") {
  for (const lab::LabDecl& d : lab::catalog()) {
    CAPTURE(d.source());
    const std::string text = read(root() / d.source());
    CHECK(text.find("#include \"amp.h\"") != std::string::npos);
    const auto lines = lines_of(text);
    std::string header;  // the header comment, its lines joined: it says where the AMP code is
    for (size_t i = 0; i < lines.size() && lines[i].rfind("//", 0) == 0; ++i) header += lines[i].substr(2);
    for (std::string::size_type at; (at = header.find("  ")) != std::string::npos;) header.erase(at, 1);
    CHECK(header.find("The AMP code is in amp.cpp") != std::string::npos);
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back().rfind("AMP_LAB(", 0) == 0);
  }
}

TEST_CASE("an exercise's starter is its lab's amp.cpp with lines taken out: the same definitions, TODOs") {
  int exercises = 0;
  for (const lab::LabDecl& d : lab::catalog()) {
    const fs::path starter = root() / d.folder() / "exercise.cpp";
    if (!fs::exists(starter)) continue;
    ++exercises;
    CAPTURE(starter.string());
    const std::string text = read(starter);
    CHECK(text.find("// TODO: ") != std::string::npos);
    CHECK(text.find("#include \"amp.h\"") != std::string::npos);
    const std::string id = (d.number < 10 ? "0" : "") + std::to_string(d.number);
    CHECK(text.find("amp-lab check " + id) != std::string::npos);  // the header names its judge
    // Every definition amp.cpp opens, the starter opens too, in the same words: the learner's file
    // replaces amp.cpp, so it must define what lab.cpp calls.
    const auto defined = definitions(read(root() / d.amp_source()));
    CHECK_FALSE(defined.empty());
    CHECK(definitions(text) == defined);
  }
  CHECK(exercises >= 8);
}

}  // namespace test_lab_files
