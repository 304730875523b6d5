#include "lab/report.h"

#include <algorithm>
#include <cstdint>
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
void Report::dtypes(std::string low_precision, std::string note) {
  dtypes_ = std::move(low_precision);
  blocks_.push_back(Note{"dtypes: " + std::move(note)});
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
  return check(std::move(key), std::move(claim), passed, std::move(evidence), nlohmann::json::object());
}

bool Report::check(std::string key, std::string claim, bool passed, std::string evidence,
                   nlohmann::json values) {
  if (!key.empty() && find_check(key))
    throw std::invalid_argument("report '" + id_ + "': check '" + key + "' recorded twice");
  if (!values.is_object())
    throw std::invalid_argument("report '" + id_ + "': check '" + key + "': values must be an object");
  for (const auto& [name, value] : values.items())
    if (!value.is_number() && !value.is_boolean())
      throw std::invalid_argument("report '" + id_ + "': check '" + key + "': value '" + name +
                                  "' must be a number or a boolean");
  checks_.push_back({std::move(key), std::move(claim), std::move(evidence), passed, std::move(values)});
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

namespace {

// The arrow lab::log2_histogram (charts.cpp) puts before a row's marker labels.
constexpr std::string_view kMarkerArrow = "  <- ";

size_t leading_blanks(const std::string& s) {
  return s.find_first_not_of(' ') == std::string::npos ? s.size() : s.find_first_not_of(' ');
}

// A run of glyphs wider than the room (a long sparkline) in pieces of `width` glyphs, each after `indent`:
// a chart's bar is not a word, and cut it reads on, like a line of a plot.
std::vector<std::string> cut_glyphs(const std::string& line, size_t width) {
  const size_t lead = leading_blanks(line);
  const std::string indent(lead, ' ');
  const size_t room = width > lead ? width - lead : 1;
  std::vector<std::string> out;
  std::string piece;
  size_t glyphs = 0;
  for (size_t i = lead; i < line.size(); ++i) {
    const bool starts_glyph = (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    if (starts_glyph && glyphs == room) out.push_back(indent + piece), piece.clear(), glyphs = 0;
    piece += line[i];
    glyphs += starts_glyph;
  }
  out.push_back(indent + piece);
  return out;
}

// One chart line in `width` glyphs: split at the last run of two blanks where the part before it fits
// (a chart's columns are set apart that way), the rest wrapped below it, indented two more.
std::vector<std::string> fit_chart_line(const std::string& line, size_t width) {
  if (display_width(line) <= width) return {line};
  const size_t lead = leading_blanks(line);
  const std::string hang(lead + 2, ' ');
  std::vector<std::string> lines;
  for (size_t at = line.rfind("  "); at != std::string::npos && at > lead && lines.empty();
       at = at ? line.rfind("  ", at - 1) : std::string::npos) {
    std::string head = line.substr(0, at);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    if (head.size() <= lead || display_width(head) > width) continue;
    lines = wrap_lines(line.substr(at), width, hang, hang);
    lines.insert(lines.begin(), head);
  }
  if (lines.empty()) lines = wrap_lines(line, width, std::string(lead, ' '), hang);
  std::vector<std::string> out;
  for (const auto& l : lines) {  // only a line of one word can still be too wide
    if (display_width(l) <= width)
      out.push_back(l);
    else
      for (auto& piece : cut_glyphs(l, width)) out.push_back(std::move(piece));
  }
  return out;
}

// A chart's lines in `width` glyphs. When a histogram's marker labels do not fit, every row keeps only
// "<- [k]" and the labels follow the chart as notes [1], [2], ..., so the bars stay one row each.
std::vector<std::string> fit_chart(const std::vector<std::string>& lines, size_t width) {
  bool overflow = false;
  for (const auto& line : lines)
    overflow |= line.find(kMarkerArrow) != std::string::npos && display_width(line) > width;
  std::vector<std::string> out, labels;
  for (const auto& line : lines) {
    std::string row = line;
    if (const size_t at = line.find(kMarkerArrow); overflow && at != std::string::npos) {
      labels.push_back(line.substr(at + kMarkerArrow.size()));
      row = line.substr(0, at) + std::string(kMarkerArrow) + "[" + std::to_string(labels.size()) + "]";
    }
    for (auto& piece : fit_chart_line(row, width)) out.push_back(std::move(piece));
  }
  for (size_t k = 0; k < labels.size(); ++k) {
    const std::string mark = "[" + std::to_string(k + 1) + "] ";
    for (auto& piece : wrap_lines(labels[k], width, mark, std::string(mark.size(), ' ')))
      out.push_back(std::move(piece));
  }
  return out;
}

// An observation at a width: label and value side by side, the label in a column `column` glyphs wide and
// the value after it, each wrapped in its own column so the values of a report stay aligned; when that
// leaves the value too little room, or a word of the label does not fit the column, the value goes under
// the label (stacked).
struct ObservationLayout {
  std::vector<std::string> label, value;  // without the line's indent
  bool stacked = false;
  size_t height() const {
    return stacked ? label.size() + value.size() : std::max(label.size(), value.size());
  }
};

ObservationLayout lay_out(const Observation& o, size_t column, size_t width) {
  const size_t room = width - 4 - std::min(column, width - 4);
  ObservationLayout layout{wrap_lines(o.label, column, "", "  "), wrap_lines(o.text, room, "", "  ")};
  const auto fits = [](const std::vector<std::string>& lines, size_t w) {
    return std::all_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return display_width(l) <= w; });
  };
  if (room >= 12 && fits(layout.label, column)) return layout;
  return {wrap_lines(o.label, width - 2, "", "  "), wrap_lines(o.text, width - 6, "", "  "), true};
}

// The label column that lays out a report's observations in the fewest lines (the widest of those), from
// a third of the line to all of it but 12 glyphs for the values, and never wider than the longest label.
size_t label_column(const std::vector<Observation>& observations, size_t label_width, size_t width) {
  const size_t narrowest = std::min(label_width, (width - 4) / 3);
  const size_t widest = std::max(narrowest, std::min(label_width, width - 4 - 12));
  size_t best = narrowest, best_lines = SIZE_MAX;
  for (size_t column = narrowest; column <= widest; ++column) {
    size_t lines = 0;
    for (const auto& o : observations) lines += lay_out(o, column, width).height();
    if (lines <= best_lines) best = column, best_lines = lines;
  }
  return best;
}

// Renders one report's blocks. With width 0 every item is one line, exactly as the lab wrote it; with a
// width, the same items are laid out to fit it (RenderOptions::width).
class Writer {
 public:
  Writer(const Style& style, size_t width, size_t label_width)
      : style_(style), width_(width ? std::max(width, kMinLayoutWidth) : 0), label_width_(label_width) {}

  std::string out;

  void title(const std::string& text) {
    if (!width_) return void(out += style_.bold("== " + text + " ==") + "\n");
    for (const auto& line : wrap_lines("== " + text + " ==", width_, "", "   "))
      out += style_.bold(line) + "\n";
  }
  void header(const std::string& text) {
    for (const auto& line : lines(text, "", "  ")) out += style_.dim(line) + "\n";
  }
  void heading(const std::string& text) {
    out += "\n";
    for (const auto& line : lines(text, "", "  ")) out += style_.bold(line) + "\n";
  }
  void note(const std::string& text) {
    for (const auto& line : lines(text, "  ", "    ")) out += line + "\n";
  }
  void takeaway(const std::string& text) { marked("  ", style_.bold("=> "), 3, "", text, 0); }
  void check(const Check& check) {
    marked("  ", check.passed ? style_.green("PASS") : style_.red("FAIL"), 4, "  ", check.claim, 2);
    const auto evidence =
        width_ ? wrap_lines(check.evidence, width_ - 8, "", "  ") : std::vector{check.evidence};
    for (const auto& line : evidence) out += "        " + style_.dim(line) + "\n";
  }
  void observation(const Observation& o);
  void table(const Table& table) {
    if (!table.title().empty()) note(table.title());
    const size_t room = width_ ? width_ - 4 : 0;
    for (const auto& line : format_table(table.columns(), table.rows(), room)) out += "    " + line + "\n";
  }
  void chart(const Chart& chart) {
    if (!chart.title.empty()) note(chart.title);
    for (const auto& line : width_ ? fit_chart(chart.lines, width_ - 4) : chart.lines)
      out += "    " + line + "\n";
  }
  // A closing line (the verdict, the run time): styled by the caller, so wrapped only when too wide.
  void closing(const std::string& styled, const std::string& plain) {
    if (!width_ || display_width(plain) <= width_) return void(out += styled + "\n");
    for (const auto& line : wrap_lines(plain, width_, "", "  ")) out += line + "\n";
  }

 private:
  std::vector<std::string> lines(const std::string& text, const std::string& first,
                                 const std::string& rest) const {
    if (!width_) return {first + text};
    return wrap_lines(text, width_, first, rest);
  }
  // `indent`, a styled `marker` `marker_glyphs` wide, `gap`, then `text`; its later lines start under the
  // text, `hang` columns further in.
  void marked(const std::string& indent, const std::string& marker, size_t marker_glyphs,
              const std::string& gap, const std::string& text, size_t hang) {
    if (!width_) return void(out += indent + marker + gap + text + "\n");
    const size_t at = indent.size() + marker_glyphs + gap.size();
    const auto wrapped = wrap_lines(text, width_ - at, "", std::string(hang, ' '));
    for (size_t k = 0; k < wrapped.size(); ++k)
      out += (k == 0 ? indent + marker + gap : std::string(at, ' ')) + wrapped[k] + "\n";
  }

  const Style& style_;
  size_t width_;
  size_t label_width_;
};

void Writer::observation(const Observation& o) {
  if (!width_)
    return void(out += "  " + pad_right(o.label, label_width_) + "  " + style_.bold(o.text) + "\n");
  const ObservationLayout layout = lay_out(o, label_width_, width_);
  if (layout.stacked) {
    for (const auto& line : layout.label) out += "  " + line + "\n";
    for (const auto& line : layout.value) out += "      " + style_.bold(line) + "\n";
    return;
  }
  for (size_t k = 0; k < std::max(layout.label.size(), layout.value.size()); ++k) {
    const std::string left = k < layout.label.size() ? layout.label[k] : "";
    std::string line = "  " + pad_right(left, label_width_);
    if (k < layout.value.size()) line += "  " + style_.bold(layout.value[k]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
}

}  // namespace

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
  const size_t width = options.width ? std::max(options.width, kMinLayoutWidth) : 0;
  // With a width, the label column that takes the fewest lines; without, the longest label's (at most 52).
  Writer w(style, width, width ? label_column(observations_, label_width, width) : label_width);
  if (options.part != Part::Details) w.title(neutral ? options.heading : title_);
  if (essential && !header_.empty()) w.header(header_);
  bool in_detail = false;
  for (const Block& block : blocks_) {
    if (auto* h = std::get_if<Heading>(&block)) in_detail = h->detail;
    const bool measured = in_detail ? details : essential;
    if (auto* h = std::get_if<Heading>(&block)) {
      if (measured) w.heading(h->text);
    } else if (auto* n = std::get_if<Note>(&block)) {
      if (measured) w.note(n->text);
    } else if (auto* t = std::get_if<Takeaway>(&block)) {
      if (verdict) w.takeaway(t->text);
    } else if (auto* o = std::get_if<ObsRef>(&block)) {
      if (measured) w.observation(observations_[o->index]);
    } else if (auto* t = std::get_if<TableRef>(&block)) {
      if (measured) w.table(tables_[t->index]);
    } else if (auto* c = std::get_if<ChartRef>(&block)) {
      if (measured) w.chart(charts_[c->index]);
    } else if (auto* k = std::get_if<CheckRef>(&block)) {
      if (verdict) w.check(checks_[k->index]);
    }
  }
  if (options.part == Part::Details) return w.out;
  const std::string elapsed = num(elapsed_s_, 3) + " s";
  if (!verdict) {
    if (!options.elapsed_line) return w.out;
    w.closing(style.dim("(measured in " + elapsed + ")"), "(measured in " + elapsed + ")");
    return w.out;
  }
  const std::string counts = ", " + std::to_string(checks_passed()) + "/" + std::to_string(checks_.size()) +
                             " checks hold (" + elapsed + ")";
  w.out += "\n";
  w.closing("verdict: " + (passed() ? style.green("PASS") : style.red("FAIL")) + counts,
            std::string("verdict: ") + (passed() ? "PASS" : "FAIL") + counts);
  return w.out;
}

nlohmann::json Report::to_json() const {
  nlohmann::json j;
  j["lab"] = id_;
  j["title"] = title_;
  j["header"] = header_;
  j["dtypes"] = dtypes_;
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
    j["checks"].push_back({{"key", c.key},
                           {"claim", c.claim},
                           {"evidence", c.evidence},
                           {"passed", c.passed},
                           {"values", c.values}});
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
  if (j.contains("dtypes")) r.dtypes_ = text_of(j, "dtypes");
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
                         field(c, "passed", T::boolean).get<bool>(),
                         c.contains("values") ? field(c, "values", T::object) : nlohmann::json::object()});
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
