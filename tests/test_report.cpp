// The lab framework: a report renders the same facts as text and as JSON, and the registry runs labs.
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "lab/charts.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace {

lab::Report tiny_lab(const lab::Context& ctx) {
  lab::Report r("tiny", "A tiny lab for the framework's own tests");
  r.note("dtypes fp32, " + lab::short_name(ctx.dtype));
  r.observe("draw", "first random draw", torch::rand({1}).item<double>());
  r.check("a random draw lies in [0, 1)", true, "by construction");
  return r;
}
AMP_LAB_REGISTER("tiny", /*question=*/9, "A tiny lab", /*heading=*/"A draw from a seeded generator", tiny_lab,
                 /*provides=*/{"draw"});

}  // namespace

TEST_CASE("a report keeps observations, tables, charts and checks in the order they were added") {
  lab::Report r("demo", "Demo");
  r.section("Part A");
  r.observe("share", "share lost", 12.5, "%");
  r.table("formats", {"format", "bits"}).row({"fp16", "16"}).row({"bf16", "16"});
  r.chart(lab::sparkline("scale", {1, 2, 4, 8}, /*log2_scale=*/true));
  r.check("16-bit formats have 16 bits", true, "16 == 16");
  const std::string text = r.render_text();
  CHECK(text.find("Part A") < text.find("share lost"));
  CHECK(text.find("share lost") < text.find("fp16"));
  CHECK(text.find("fp16") < text.find("▁"));
  CHECK(text.find("12.50%") != std::string::npos);
  CHECK(text.find("PASS  16-bit formats have 16 bits") != std::string::npos);
  CHECK(text.find("verdict: PASS, 1/1 checks hold") != std::string::npos);
}

TEST_CASE("the measured part hides the title, checks and takeaways, and the verdict part shows only them") {
  lab::Report r("demo", "Loss scaling rescues gradients");
  r.note("dtypes: fp16");
  r.observe("share", "gradients zeroed", 55.6, "%");
  r.check("scaling rescues them", true, "55.6% -> 0.0%");
  r.takeaway("scaling shifts small gradients into range");
  const std::string measured = r.render_text({.part = lab::Part::Measured, .heading = "Small gradients in fp16"});
  CHECK(measured.find("Small gradients in fp16") != std::string::npos);
  CHECK(measured.find("gradients zeroed") != std::string::npos);
  CHECK(measured.find("dtypes: fp16") != std::string::npos);
  CHECK(measured.find("rescues") == std::string::npos);
  CHECK(measured.find("PASS") == std::string::npos);
  CHECK(measured.find("shifts small gradients") == std::string::npos);
  CHECK(measured.find("verdict") == std::string::npos);
  const std::string verdict = r.render_text({.part = lab::Part::Verdict});
  CHECK(verdict.find("Loss scaling rescues gradients") != std::string::npos);
  CHECK(verdict.find("PASS  scaling rescues them") != std::string::npos);
  CHECK(verdict.find("shifts small gradients") != std::string::npos);
  CHECK(verdict.find("gradients zeroed") == std::string::npos);
  CHECK(verdict.find("verdict: PASS, 1/1") != std::string::npos);
  const std::string all = r.render_text();
  CHECK(all.find("gradients zeroed") < all.find("PASS"));
  CHECK(all.find("PASS") < all.find("shifts small gradients"));
  CHECK(r.to_json()["takeaways"][0] == "scaling shifts small gradients into range");
}

TEST_CASE("a failed check fails the report and shows as FAIL") {
  lab::Report r("demo", "Demo");
  r.check("holds", true, "yes");
  r.check("does not hold", false, "measured 0.3, needed < 0.1");
  CHECK_FALSE(r.passed());
  CHECK(r.checks_passed() == 1);
  CHECK(r.render_text().find("FAIL  does not hold") != std::string::npos);
  CHECK(r.to_json()["passed"] == false);
}

TEST_CASE("the JSON form carries every observation with its value and unit") {
  lab::Report r("demo", "Demo");
  r.observe("underflow", "underflow share", 31.25, "%");
  r.observe("speedup", "bf16 vs fp32", 1.5, "x", "1.50x");
  const auto j = r.to_json();
  CHECK(j["lab"] == "demo");
  CHECK(j["observations"]["underflow"]["value"].get<double>() == doctest::Approx(31.25));
  CHECK(j["observations"]["speedup"]["text"] == "1.50x");
  CHECK(j["observations"]["speedup"]["unit"] == "x");
  CHECK(r.value("speedup") == doctest::Approx(1.5));
  CHECK_THROWS_AS(r.value("missing"), std::out_of_range);
}

TEST_CASE("an observation key may be recorded only once") {
  lab::Report r("demo", "Demo");
  r.observe("x", "x", 1);
  CHECK_THROWS_AS(r.observe("x", "x again", 2), std::invalid_argument);
}

TEST_CASE("the log2 histogram counts zeros apart and puts each magnitude in its exponent's row") {
  auto v = torch::tensor({0.0, 0.0, 1.0, 1.5, 0.25, std::ldexp(1.0, -30)});
  const auto chart = lab::log2_histogram("grads", v, /*lo=*/-24, /*hi=*/4, /*step=*/1, {{-24, "fp16 min subnormal"}});
  CHECK(chart.data["zeros"] == 2);
  const auto counts = chart.data["counts"].get<std::vector<int64_t>>();
  REQUIRE(counts.size() == 28);
  CHECK(counts[0] == 1);        // 2^-30 clamps into the lowest row, "< 2^-23"
  CHECK(counts[24 + 0] == 2);   // 1.0 and 1.5 have exponent 0
  CHECK(counts[24 - 2] == 1);   // 0.25 = 2^-2
  bool marked = false;
  for (const auto& line : chart.lines) marked |= line.find("fp16 min subnormal") != std::string::npos;
  CHECK(marked);
}

TEST_CASE("the registry finds a lab by id, by question number and runs it seeded") {
  const lab::LabInfo* info = lab::find_lab("tiny");
  REQUIRE(info != nullptr);
  CHECK(lab::find_lab("9") == info);
  CHECK(lab::find_lab("no-such-lab") == nullptr);
  CHECK(info->provides == std::vector<std::string>{"draw"});
  CHECK(info->source == "tests/test_report.cpp");
  lab::Context ctx;
  ctx.seed = 7;
  const auto a = lab::run_lab(*info, ctx);
  const auto b = lab::run_lab(*info, ctx);
  ctx.seed = 8;
  const auto c = lab::run_lab(*info, ctx);
  CHECK(a.value("draw") == b.value("draw"));
  CHECK(a.value("draw") != c.value("draw"));
  CHECK(a.render_text().find("seed 7") != std::string::npos);
  CHECK(a.passed());
}
