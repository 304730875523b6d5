#include "lab/report.h"

#include <algorithm>
#include <stdexcept>

#include "lab/text.h"

namespace lab {

Table::Table(std::string title, std::vector<std::string> columns)
    : title_(std::move(title)), columns_(std::move(columns)) {}

Table& Table::row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::invalid_argument("table '" + title_ + "': row has " + std::to_string(cells.size()) +
                                " cells, expected " + std::to_string(columns_.size()));
  rows_.push_back(std::move(cells));
  return *this;
}

Report::Report(std::string lab_id, std::string title) : id_(std::move(lab_id)), title_(std::move(title)) {}

void Report::section(std::string heading) { blocks_.push_back(Heading{std::move(heading)}); }
void Report::note(std::string text) { blocks_.push_back(Note{std::move(text)}); }
void Report::takeaway(std::string text) { blocks_.push_back(Takeaway{std::move(text)}); }

const Observation& Report::observe(std::string key, std::string label, double value, std::string unit,
                                   std::string text) {
  if (find(key)) throw std::invalid_argument("report '" + id_ + "': observation '" + key + "' recorded twice");
  if (text.empty()) text = unit == "%" ? percent(value / 100.0, 2) : num(value) + (unit.empty() ? "" : " " + unit);
  observations_.push_back({std::move(key), std::move(label), value, std::move(unit), std::move(text)});
  blocks_.push_back(ObsRef{observations_.size() - 1});
  return observations_.back();
}

Table& Report::table(std::string title, std::vector<std::string> columns) {
  tables_.emplace_back(std::move(title), std::move(columns));
  blocks_.push_back(TableRef{tables_.size() - 1});
  return tables_.back();
}

void Report::chart(Chart chart) {
  charts_.push_back(std::move(chart));
  blocks_.push_back(ChartRef{charts_.size() - 1});
}

bool Report::check(std::string claim, bool passed, std::string evidence) {
  checks_.push_back({std::move(claim), std::move(evidence), passed});
  blocks_.push_back(CheckRef{checks_.size() - 1});
  return passed;
}

bool Report::passed() const {
  return std::all_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.passed; });
}

int Report::checks_passed() const {
  return static_cast<int>(std::count_if(checks_.begin(), checks_.end(), [](const Check& c) { return c.passed; }));
}

const Observation* Report::find(std::string_view key) const {
  for (const auto& o : observations_)
    if (o.key == key) return &o;
  return nullptr;
}

double Report::value(std::string_view key) const {
  if (const Observation* o = find(key)) return o->value;
  throw std::out_of_range("report '" + id_ + "' has no observation '" + std::string(key) + "'");
}

std::string Report::render_text(const RenderOptions& options) const {
  const Style style{options.color};
  const bool measured = options.part != Part::Verdict;  // observations, tables, charts, notes
  const bool verdict = options.part != Part::Measured;  // checks, takeaways, the verdict line
  size_t label_width = 0;
  for (const auto& o : observations_) label_width = std::max(label_width, display_width(o.label));
  label_width = std::min<size_t>(label_width, 52);

  const bool neutral = options.part == Part::Measured && !options.heading.empty();
  std::string out = style.bold("== " + (neutral ? options.heading : title_) + " ==") + "\n";
  if (measured && !header_.empty()) out += style.dim(header_) + "\n";
  for (const Block& block : blocks_) {
    if (auto* h = std::get_if<Heading>(&block)) {
      if (measured) out += "\n" + style.bold(h->text) + "\n";
    } else if (auto* n = std::get_if<Note>(&block)) {
      if (measured) out += "  " + n->text + "\n";
    } else if (auto* t = std::get_if<Takeaway>(&block)) {
      if (verdict) out += "  " + style.bold("=> ") + t->text + "\n";
    } else if (auto* o = std::get_if<ObsRef>(&block)) {
      const Observation& obs = observations_[o->index];
      if (measured) out += "  " + pad_right(obs.label, label_width) + "  " + style.bold(obs.text) + "\n";
    } else if (auto* t = std::get_if<TableRef>(&block)) {
      if (!measured) continue;
      const Table& table = tables_[t->index];
      if (!table.title().empty()) out += "  " + table.title() + "\n";
      for (const auto& line : format_table(table.columns(), table.rows())) out += "    " + line + "\n";
    } else if (auto* c = std::get_if<ChartRef>(&block)) {
      if (!measured) continue;
      const Chart& chart = charts_[c->index];
      if (!chart.title.empty()) out += "  " + chart.title + "\n";
      for (const auto& line : chart.lines) out += "    " + line + "\n";
    } else if (auto* k = std::get_if<CheckRef>(&block)) {
      if (!verdict) continue;
      const Check& check = checks_[k->index];
      out += "  " + (check.passed ? style.green("PASS") : style.red("FAIL")) + "  " + check.claim + "\n";
      out += "        " + style.dim(check.evidence) + "\n";
    }
  }
  if (!verdict) return out + style.dim("(measured in " + num(elapsed_s_, 3) + " s)") + "\n";
  const int total = static_cast<int>(checks_.size());
  std::string verdict_word = passed() ? style.green("PASS") : style.red("FAIL");
  out += "\nverdict: " + verdict_word + ", " + std::to_string(checks_passed()) + "/" + std::to_string(total) +
         " checks hold (" + num(elapsed_s_, 3) + " s)\n";
  return out;
}

nlohmann::json Report::to_json() const {
  nlohmann::json j;
  j["lab"] = id_;
  j["title"] = title_;
  j["header"] = header_;
  j["passed"] = passed();
  j["elapsed_s"] = elapsed_s_;
  j["observations"] = nlohmann::json::object();
  for (const auto& o : observations_)
    j["observations"][o.key] = {{"label", o.label}, {"value", o.value}, {"unit", o.unit}, {"text", o.text}};
  j["tables"] = nlohmann::json::array();
  for (const auto& t : tables_) j["tables"].push_back({{"title", t.title()}, {"columns", t.columns()}, {"rows", t.rows()}});
  j["charts"] = nlohmann::json::array();
  for (const auto& c : charts_) j["charts"].push_back({{"title", c.title}, {"lines", c.lines}, {"data", c.data}});
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks_) j["checks"].push_back({{"claim", c.claim}, {"evidence", c.evidence}, {"passed", c.passed}});
  j["notes"] = nlohmann::json::array();
  j["takeaways"] = nlohmann::json::array();
  for (const auto& b : blocks_) {
    if (auto* n = std::get_if<Note>(&b)) j["notes"].push_back(n->text);
    if (auto* t = std::get_if<Takeaway>(&b)) j["takeaways"].push_back(t->text);
  }
  return j;
}

}  // namespace lab
