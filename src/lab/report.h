// A lab's report: named observations with units, tables, small charts, notes and checks, kept in the
// order the lab adds them. It renders as text for people and as JSON for machines.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

// The number formatters every report uses (percent, sci, num, count_of) live in text.h, which needs
// nothing of the report: it comes with it.
#include "lab/text.h"

namespace lab {

struct Observation {
  std::string key;    // stable name, used by quiz.yaml placeholders: {lost_share}
  std::string label;  // what a person reads
  double value = 0;
  std::string unit;  // "%", "ms", "x", "" ...
  std::string text;  // the value as printed, unit included
};

// A claim, the measured evidence for it, and whether the evidence supports it. The key is stable (tests,
// quiz.yaml and the JSON use it); the claim is for people and may be reworded.
struct Check {
  std::string key;  // "resume-bitwise": stable; quiz.yaml, exercises.yaml and the tests name it
  std::string claim;
  std::string evidence;
  bool passed = false;
  // The evidence as named numbers and booleans ({"step": 3, "gradients_finite": false}): what tells one
  // way of failing from another, for machines (exercises.yaml's hints select on them). The evidence text
  // says the same for people and may be reworded; these names are stable.
  nlohmann::json values = nlohmann::json::object();
};

class Table {
 public:
  Table(std::string title, std::vector<std::string> columns);
  Table& row(std::vector<std::string> cells);
  const std::string& title() const { return title_; }
  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::string title_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Pre-rendered terminal lines plus the numbers behind them (for JSON).
struct Chart {
  std::string title;
  std::vector<std::string> lines;
  nlohmann::json data;
};

// Which part of a report to render. The quiz shows a lab in two parts so that the learner observes
// before answering: first what was measured, under a neutral heading; after the answer, the checks.
enum class Part {
  All,       // everything, in the order the lab added it (a lab run alone, `--reveal`)
  Measured,  // the heading instead of the title; the essential sections only: no details, checks,
             // takeaways or verdict
  Details,   // the detail sections (detail_section()), for after the answer
  Verdict,   // the title, then the checks and takeaways, then the verdict line
};

struct RenderOptions {
  bool color = false;
  Part part = Part::All;
  std::string heading;  // shown in place of the title for Part::Measured (the title states the answer)
  // Columns to fit (lab::terminal_width() gives the terminal's); 0: one line per item, as the lab wrote
  // it. With a width, prose (title, notes, takeaways, observation labels and values, check claims and
  // evidence) wraps at word boundaries with a hanging indent, tables narrow or fold into records
  // (lab::format_table), and a chart's long lines are split, its histogram marker labels moved below it
  // as numbered notes. Words are never split. Widths under kMinLayoutWidth (text.h) count as that.
  size_t width = 0;
  // Part::Measured ends with "(measured in 0.15 s)"; false leaves it out (the quiz puts the run time in the
  // header line instead: one line less on a screen that has to fit).
  bool elapsed_line = true;
};

class Report {
 public:
  Report(std::string lab_id, std::string title);

  // A section of what the lab measured. The quiz shows the sections before its question; a detail
  // section (and everything after it until the next section()) only after the answer.
  void section(std::string heading);
  void detail_section(std::string heading);
  void note(std::string text);
  // The 16- and 8-bit types the lab uses, as the walk's header shows them ("fp16", "bf16 and fp16",
  // "E4M3 and E5M2"), and the note that says which type holds what: shown as the note "dtypes: <note>".
  void dtypes(std::string low_precision, std::string note);
  const std::string& dtypes() const { return dtypes_; }
  // A note that states the conclusion: kept out of the Measured part, shown with the checks.
  void takeaway(std::string text);
  // `text` defaults to the value with 4 significant digits followed by the unit.
  const Observation& observe(std::string key, std::string label, double value, std::string unit = "",
                             std::string text = "");
  Table& table(std::string title, std::vector<std::string> columns);
  void chart(Chart chart);
  // Records and returns `passed`. `key` is the check's stable key (quiz.yaml and the tests name it).
  bool check(std::string key, std::string claim, bool passed, std::string evidence);
  // The same with the evidence's named values: an object of numbers and booleans (throws
  // std::invalid_argument for anything else).
  bool check(std::string key, std::string claim, bool passed, std::string evidence, nlohmann::json values);
  // A check without a key, for labs not yet given declared check keys.
  bool check(std::string claim, bool passed, std::string evidence);
  const Check* find_check(std::string_view key) const;

  // Set by the framework from the lab's declaration.
  void set_identity(std::string id, std::string title) {
    id_ = std::move(id);
    title_ = std::move(title);
  }
  const std::string& id() const { return id_; }
  const std::string& title() const { return title_; }
  bool passed() const;
  int checks_passed() const;
  const std::vector<Check>& checks() const { return checks_; }
  const std::vector<Observation>& observations() const { return observations_; }
  const Observation* find(std::string_view key) const;
  double value(std::string_view key) const;  // throws std::out_of_range for an unknown key

  // Filled in by the framework: the context line and the run time.
  void set_header(std::string header) { header_ = std::move(header); }
  void set_elapsed(double seconds) { elapsed_s_ = seconds; }
  double elapsed() const { return elapsed_s_; }

  const std::string& header() const { return header_; }
  std::string render_text(const RenderOptions& options = {}) const;
  nlohmann::json to_json() const;
  // The report as to_json() wrote it (a lab executable's --json), ready to render again. Throws
  // std::invalid_argument naming what is missing or malformed.
  static Report from_json(const nlohmann::json& j);

 private:
  struct Heading {
    std::string text;
    bool detail = false;
  };
  struct Note {
    std::string text;
  };
  struct Takeaway {
    std::string text;
  };
  struct ObsRef {
    size_t index;
  };
  struct TableRef {
    size_t index;
  };
  struct ChartRef {
    size_t index;
  };
  struct CheckRef {
    size_t index;
  };
  using Block = std::variant<Heading, Note, Takeaway, ObsRef, TableRef, ChartRef, CheckRef>;

  std::string id_;
  std::string title_;
  std::string header_;
  std::string dtypes_;
  double elapsed_s_ = 0;
  std::vector<Block> blocks_;
  std::vector<Observation> observations_;
  std::deque<Table> tables_;  // deque: references handed out by table() stay valid
  std::vector<Chart> charts_;
  std::vector<Check> checks_;
};

}  // namespace lab
