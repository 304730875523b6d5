// The lab framework: a report renders the same facts as text and as JSON, and the registry runs labs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "lab/charts.h"
#include "lab/libtorch.h"
#include "lab/registry.h"
#include "lab/report.h"

namespace test_report {

namespace {

// A lab in the shape every lab has: measure() returns plain numbers, report() builds the report.
struct TinyResult {
  double draw;
  std::string dtype;
};

TinyResult tiny_measure(const lab::Context& ctx) {
  return {torch::rand({1}).item<double>(), lab::short_name(ctx.dtype)};
}

void tiny_report(const TinyResult& m, lab::Report& r) {
  r.note("dtypes fp32, " + m.dtype);
  r.observe("draw", "first random draw", m.draw);
  r.check("draw-in-unit-interval", "the random draw lies in [0, 1)", m.draw >= 0 && m.draw < 1,
          lab::num(m.draw));
}

const lab::LabDecl kTiny{.number = 99,
                         .id = "tiny",
                         .track = "core",
                         .title = "A tiny lab",
                         .heading = "A draw from a seeded generator"};
const lab::Registrar tiny_registrar(kTiny, __FILE__, lab::make_lab_fn(tiny_measure, tiny_report));

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
  const std::string measured =
      r.render_text({.part = lab::Part::Measured, .heading = "Small gradients in fp16"});
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
  const auto chart =
      lab::log2_histogram("grads", v, /*lo=*/-24, /*hi=*/4, /*step=*/1, {{-24, "fp16 min subnormal"}});
  CHECK(chart.data["zeros"] == 2);
  const auto counts = chart.data["counts"].get<std::vector<int64_t>>();
  REQUIRE(counts.size() == 28);
  CHECK(counts[0] == 1);       // 2^-30 clamps into the lowest row, "< 2^-23"
  CHECK(counts[24 + 0] == 2);  // 1.0 and 1.5 have exponent 0
  CHECK(counts[24 - 2] == 1);  // 0.25 = 2^-2
  bool marked = false;
  for (const auto& line : chart.lines) marked |= line.find("fp16 min subnormal") != std::string::npos;
  CHECK(marked);
}

TEST_CASE("the registry finds a lab by id, by question number and runs it seeded") {
  const lab::LabInfo* info = lab::find_lab("tiny");
  REQUIRE(info != nullptr);
  CHECK(lab::find_lab("99") == info);
  CHECK(lab::find_lab("no-such-lab") == nullptr);
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
  CHECK(a.title() == "A tiny lab");  // from the declaration
  REQUIRE(a.find_check("draw-in-unit-interval") != nullptr);
}

TEST_CASE("a report read back from its JSON renders exactly as the original, every part") {
  lab::Report r("demo", "Demo title");
  r.set_header("Q1 · labs/demo.cpp · device cpu · seed 0");
  r.set_elapsed(0.25);
  r.note("a note before any section");
  r.section("Essential");
  r.observe("zeta", "last key, first shown", 3, "x");
  r.observe("alpha", "first key, shown second", 12.5, "%");
  r.observe("diverged", "a ratio that overflowed", std::numeric_limits<double>::infinity(), "x", "inf");
  r.table("formats", {"format", "bits"}).row({"fp16", "16"});
  r.detail_section("More detail");
  r.chart(lab::sparkline("scale", {1, 2, 4}, /*log2_scale=*/true));
  r.takeaway("the conclusion");
  r.check("k1", "a claim", true, "evidence one");
  r.check("k2", "another claim", false, "evidence two");
  const lab::Report back = lab::Report::from_json(nlohmann::json::parse(r.to_json().dump()));
  for (const lab::Part part : {lab::Part::All, lab::Part::Measured, lab::Part::Details, lab::Part::Verdict}) {
    CAPTURE(static_cast<int>(part));
    CHECK(back.render_text({.part = part, .heading = "Neutral"}) ==
          r.render_text({.part = part, .heading = "Neutral"}));
  }
  CHECK(back.find_check("k2") != nullptr);
  CHECK_FALSE(back.passed());
  CHECK(std::isnan(back.value("diverged")));  // JSON has no inf: it comes back as NaN, its text as printed
  CHECK(back.find("diverged")->text == "inf");
}

TEST_CASE("detail sections stay out of the measured part and make up the details part") {
  lab::Report r("demo", "Demo");
  r.section("Shown first");
  r.observe("a", "shown before the question", 1);
  r.detail_section("Shown after the answer");
  r.observe("b", "a detail", 2);
  r.section("Shown first again");
  r.observe("c", "essential again", 3);
  const std::string measured = r.render_text({.part = lab::Part::Measured});
  const std::string details = r.render_text({.part = lab::Part::Details});
  CHECK(measured.find("shown before the question") != std::string::npos);
  CHECK(measured.find("essential again") != std::string::npos);
  CHECK(measured.find("a detail") == std::string::npos);
  CHECK(details.find("a detail") != std::string::npos);
  CHECK(details.find("essential again") == std::string::npos);
  CHECK(details.find("Demo") == std::string::npos);  // no title: it continues the report
}

TEST_CASE("a check's named values go into the JSON and come back, numbers and booleans only") {
  lab::Report r("demo", "Demo");
  r.check("k", "a claim", false, "step 3: gradients finite, weights unchanged",
          {{"step", 3}, {"gradients_finite", true}, {"factor", 0.5}});
  r.check("plain", "no values", true, "evidence");
  const nlohmann::json j = nlohmann::json::parse(r.to_json().dump());
  CHECK(j["checks"][0]["values"] ==
        nlohmann::json({{"step", 3}, {"gradients_finite", true}, {"factor", 0.5}}));
  CHECK(j["checks"][1]["values"] == nlohmann::json::object());
  const lab::Report back = lab::Report::from_json(j);
  CHECK(back.find_check("k")->values == j["checks"][0]["values"]);
  CHECK(back.find_check("k")->evidence == "step 3: gradients finite, weights unchanged");
  CHECK_THROWS_AS(r.check("text", "a claim", true, "", {{"why", "words"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.check("list", "a claim", true, "", nlohmann::json::array({1})), std::invalid_argument);
  nlohmann::json bad = j;
  bad["checks"][0]["values"] = 3;
  CHECK_THROWS_AS(lab::Report::from_json(bad), std::invalid_argument);
}

TEST_CASE("a check key is recorded once") {
  lab::Report r("demo", "Demo");
  r.check("same", "first", true, "");
  CHECK_THROWS_AS(r.check("same", "second", true, ""), std::invalid_argument);
}

TEST_CASE("the catalog finds each lab by id, number, stem and executable, and suggests near misses") {
  const lab::LabDecl* d = lab::find_decl("loss-scaling");
  REQUIRE(d != nullptr);
  for (const char* name :
       {"2", "02", "loss_scaling", "02_loss_scaling", "lab02_loss_scaling", "Loss-Scaling"}) {
    CAPTURE(name);
    CHECK(lab::find_decl(name) == d);
  }
  CHECK(d->source() == "labs/02_loss_scaling/lab.cpp");
  CHECK(d->amp_source() == "labs/02_loss_scaling/amp.cpp");
  CHECK(lab::find_decl("loss-scalin") == nullptr);
  CHECK(lab::closest_decl("loss-scalin") == d);
  CHECK(lab::closest_decl("lossscaling") == d);
  CHECK(lab::closest_decl("banana") == nullptr);
}

}  // namespace test_report
