#include "lab/report.h"

#include <algorithm>
#include <limits>
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

void Report::section(std::string heading) {
  blocks_.push_back(Heading{std::move(heading), /*detail=*/false});
}
void Report::detail_section(std::string heading) {
  blocks_.push_back(Heading{std::move(heading), /*detail=*/true});
}
void Report::note(std::string text) {
  blocks_.push_back(Note{std::move(text)});
}
void Report::takeaway(std::string text) {
  blocks_.push_back(Takeaway{std::move(text)});
}

const Observation& Report::observe(std::string key, std::string label, double value, std::string unit,
                                   std::string text) {
  if (find(key))
    throw std::invalid_argument("report '" + id_ + "': observation '" + key + "' recorded twice");
  if (text.empty())
    text = unit == "%" ? percent(value / 100.0, 2) : num(value) + (unit.empty() ? "" : " " + unit);
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

bool Report::check(std::string key, std::string claim, bool passed, std::string evidence) {
  if (!key.empty() && find_check(key))
    throw std::invalid_argument("report '" + id_ + "': check '" + key + "' recorded twice");
  checks_.push_back({std::move(key), std::move(claim), std::move(evidence), passed});
  blocks_.push_back(CheckRef{checks_.size() - 1});
  return passed;
}

bool Report::check(std::string claim, bool passed, std::string evidence) {
  return check("", std::move(claim), passed, std::move(evidence));
}

const Check* Report::find_check(std::string_view key) const {
  for (const auto& c : checks_)
    if (c.key == key) return &c;
  return nullptr;
}

bool Report::passed() const {
  return std::all_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.passed; });
}

int Report::checks_passed() const {
  return static_cast<int>(
      std::count_if(checks_.begin(), checks_.end(), [](const Check& c) { return c.passed; }));
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
  // Observations, tables, charts and notes; in the essential sections, the detail ones, or both.
  const bool essential = options.part == Part::All || options.part == Part::Measured;
  const bool details = options.part == Part::All || options.part == Part::Details;
  const bool verdict =
      options.part == Part::All || options.part == Part::Verdict;  // checks, takeaways, verdict
  size_t label_width = 0;
  for (const auto& o : observations_) label_width = std::max(label_width, display_width(o.label));
  label_width = std::min<size_t>(label_width, 52);

  const bool neutral = options.part == Part::Measured && !options.heading.empty();
  std::string out;
  if (options.part != Part::Details)
    out += style.bold("== " + (neutral ? options.heading : title_) + " ==") + "\n";
  if (essential && !header_.empty()) out += style.dim(header_) + "\n";
  bool in_detail = false;
  for (const Block& block : blocks_) {
    if (auto* h = std::get_if<Heading>(&block)) in_detail = h->detail;
    const bool measured = in_detail ? details : essential;
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
  if (options.part == Part::Details) return out;
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
  for (const auto& t : tables_)
    j["tables"].push_back({{"title", t.title()}, {"columns", t.columns()}, {"rows", t.rows()}});
  j["charts"] = nlohmann::json::array();
  for (const auto& c : charts_)
    j["charts"].push_back({{"title", c.title}, {"lines", c.lines}, {"data", c.data}});
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks_)
    j["checks"].push_back(
        {{"key", c.key}, {"claim", c.claim}, {"evidence", c.evidence}, {"passed", c.passed}});
  j["notes"] = nlohmann::json::array();
  j["takeaways"] = nlohmann::json::array();
  // The order of everything, so that from_json() renders the report as the lab did.
  j["blocks"] = nlohmann::json::array();
  for (const auto& b : blocks_) {
    if (auto* h = std::get_if<Heading>(&b))
      j["blocks"].push_back({{"section", h->text}, {"detail", h->detail}});
    if (auto* n = std::get_if<Note>(&b)) {
      j["notes"].push_back(n->text);
      j["blocks"].push_back({{"note", n->text}});
    }
    if (auto* t = std::get_if<Takeaway>(&b)) {
      j["takeaways"].push_back(t->text);
      j["blocks"].push_back({{"takeaway", t->text}});
    }
    if (auto* o = std::get_if<ObsRef>(&b))
      j["blocks"].push_back({{"observation", observations_[o->index].key}});
    if (auto* t = std::get_if<TableRef>(&b)) j["blocks"].push_back({{"table", t->index}});
    if (auto* c = std::get_if<ChartRef>(&b)) j["blocks"].push_back({{"chart", c->index}});
    if (auto* c = std::get_if<CheckRef>(&b)) j["blocks"].push_back({{"check", c->index}});
  }
  return j;
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name, nlohmann::json::value_t type) {
  const auto it = j.find(name);
  const bool number = type == nlohmann::json::value_t::number_float;
  if (it == j.end() || (number ? !it->is_number() : it->type() != type))
    throw std::invalid_argument(std::string("report JSON: '") + name + "' is missing or of the wrong type");
  return *it;
}

std::string text_of(const nlohmann::json& j, const char* name) {
  return field(j, name, nlohmann::json::value_t::string).get<std::string>();
}

size_t index_of(const nlohmann::json& value, size_t size, const char* what) {
  if (!value.is_number_unsigned() || value.get<size_t>() >= size)
    throw std::invalid_argument(std::string("report JSON: a block names ") + what + " that does not exist");
  return value.get<size_t>();
}

}  // namespace

Report Report::from_json(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  if (!j.is_object()) throw std::invalid_argument("report JSON: not an object");
  Report r(text_of(j, "lab"), text_of(j, "title"));
  r.header_ = text_of(j, "header");
  r.elapsed_s_ = field(j, "elapsed_s", T::number_float).get<double>();
  const auto& observations = field(j, "observations", T::object);
  for (const auto& t : field(j, "tables", T::array)) {
    Table& table = r.tables_.emplace_back(text_of(t, "title"),
                                          field(t, "columns", T::array).get<std::vector<std::string>>());
    for (const auto& row : field(t, "rows", T::array)) table.row(row.get<std::vector<std::string>>());
  }
  for (const auto& c : field(j, "charts", T::array))
    r.charts_.push_back({text_of(c, "title"), field(c, "lines", T::array).get<std::vector<std::string>>(),
                         c.value("data", nlohmann::json())});
  for (const auto& c : field(j, "checks", T::array))
    r.checks_.push_back({c.value("key", ""), text_of(c, "claim"), text_of(c, "evidence"),
                         field(c, "passed", T::boolean).get<bool>()});
  for (const auto& b : field(j, "blocks", T::array)) {
    if (b.contains("section")) {
      r.blocks_.push_back(Heading{text_of(b, "section"), b.value("detail", false)});
    } else if (b.contains("note")) {
      r.blocks_.push_back(Note{text_of(b, "note")});
    } else if (b.contains("takeaway")) {
      r.blocks_.push_back(Takeaway{text_of(b, "takeaway")});
    } else if (b.contains("observation")) {
      // The observations object is sorted by key; the blocks keep the lab's order.
      const std::string key = text_of(b, "observation");
      const auto o = observations.find(key);
      if (o == observations.end() || r.find(key))
        throw std::invalid_argument("report JSON: observation '" + key + "' is missing or shown twice");
      // JSON has no inf or NaN: to_json() wrote them as null.
      const auto v = o->find("value");
      const double value = v != o->end() && v->is_null() ? std::numeric_limits<double>::quiet_NaN()
                                                         : field(*o, "value", T::number_float).get<double>();
      r.observations_.push_back({key, text_of(*o, "label"), value, text_of(*o, "unit"), text_of(*o, "text")});
      r.blocks_.push_back(ObsRef{r.observations_.size() - 1});
    } else if (b.contains("table")) {
      r.blocks_.push_back(TableRef{index_of(b["table"], r.tables_.size(), "a table")});
    } else if (b.contains("chart")) {
      r.blocks_.push_back(ChartRef{index_of(b["chart"], r.charts_.size(), "a chart")});
    } else if (b.contains("check")) {
      r.blocks_.push_back(CheckRef{index_of(b["check"], r.checks_.size(), "a check")});
    } else {
      throw std::invalid_argument("report JSON: a block of unknown kind");
    }
  }
  if (r.observations_.size() != observations.size())
    throw std::invalid_argument("report JSON: an observation is in no block");
  return r;
}

}  // namespace lab
