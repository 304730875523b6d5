// exercises.yaml: reading the exercises and their hints (runner/exercise_table.h).
#include "runner/exercise_table.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lab/text.h"
#include "runner/yaml_file.h"

namespace runner {

const std::vector<std::string> kExercisesKeys = {"exercises", "library_errors"};
const std::vector<std::string> kExerciseKeys = {"lab", "title", "lab_runs", "hints"};
const std::vector<std::string> kHintKeys = {"id",    "check", "value", "observation", "range",
                                            "error", "text",  "api",   "code"};

bool ExerciseInfo::judges_learner(const std::string& key) const {
  return std::find(lab_runs.begin(), lab_runs.end(), key) == lab_runs.end();
}

int hint_steps(const ExerciseHint& h) {
  return h.api.empty() ? 1 : h.code.empty() ? 2 : 3;
}

const std::string& hint_step(const ExerciseHint& h, int step) {
  return step >= 3 ? h.code : step == 2 ? h.api : h.text;
}

namespace {

constexpr DataKind kExercisesFile{"exercises file", "exercises", 1 << 20};

// observation and range: [lo, hi], the values of that observation that tell this mistake apart.
void read_range(const YamlFile& v, const YAML::Node& node, const std::string& at, ExerciseHint& h) {
  if (!node["observation"])
    v.fail(node["range"].Mark(), at + ".range", "goes with an observation, and this hint names none");
  h.observation = v.text(node, "observation", at + ".observation");
  const YAML::Node range = node["range"];
  if (!range)
    v.fail(node["observation"].Mark(), at + ".range", "missing: an observation needs its range [lo, hi]");
  if (!range.IsSequence() || range.size() != 2)
    v.fail(range.Mark(), at + ".range", std::string("must be [lo, hi], two numbers, got ") + kind_of(range));
  h.lo = v.number(range[0], at + ".range[0]");
  h.hi = v.number(range[1], at + ".range[1]");
  if (h.lo > h.hi)
    v.fail(range.Mark(), at + ".range",
           fmt::format("lo {} is above hi {}", lab::quote(range[0].Scalar()), lab::quote(range[1].Scalar())));
}

// value: {name, range: [lo, hi]}, or a list of them: the failed check's named values that tell this mistake
// apart (a boolean as 0 or 1).
void read_values(const YamlFile& v, const YAML::Node& node, const std::string& at, ExerciseHint& h) {
  const YAML::Node value = node["value"];
  const auto read_one = [&](const YAML::Node& item, const std::string& field) {
    v.mapping(item, {"name", "range"}, field, "a mapping with name and range: [lo, hi]");
    ValueRange r;
    r.name = v.text(item, "name", field + ".name");
    const YAML::Node range = v.required(item, "range", field + ".range");
    if (!range.IsSequence() || range.size() != 2)
      v.fail(range.Mark(), field + ".range",
             std::string("must be [lo, hi], two numbers, got ") + kind_of(range));
    r.lo = v.number(range[0], field + ".range[0]");
    r.hi = v.number(range[1], field + ".range[1]");
    if (r.lo > r.hi)
      v.fail(
          range.Mark(), field + ".range",
          fmt::format("lo {} is above hi {}", lab::quote(range[0].Scalar()), lab::quote(range[1].Scalar())));
    h.values.push_back(std::move(r));
  };
  if (value.IsSequence()) {
    const YAML::Node items = v.list(value, at + ".value");
    for (size_t i = 0; i < items.size(); ++i) read_one(items[i], fmt::format("{}.value[{}]", at, i));
  } else {
    read_one(value, at + ".value");
  }
}

// How the report shows the mistake: the lab's error message (error), or a failed check (check), told
// apart from other mistakes that fail it by its named values or an observation's range.
void read_match(const YamlFile& v, const YAML::Node& node, const std::string& at, ExerciseHint& h) {
  if (node["check"] && node["error"]) v.fail(node["error"].Mark(), at, "give check or error, not both");
  if (!node["check"] && !node["error"]) v.fail(node.Mark(), at, "missing check or error (one is required)");
  if (node["error"]) {
    h.error = v.text(node, "error", at + ".error");
    for (const char* key : {"value", "observation", "range"})
      if (node[key]) v.fail(node[key].Mark(), at + "." + key, "goes with check, not with error");
    return;
  }
  h.check = v.text(node, "check", at + ".check");
  if (node["value"] && (node["observation"] || node["range"]))
    v.fail(node["value"].Mark(), at, "give value or observation, not both");
  if (node["value"]) read_values(v, node, at, h);
  if (node["observation"] || node["range"]) read_range(v, node, at, h);
}

ExerciseHint read_hint(const YamlFile& v, const YAML::Node& node, const std::string& at,
                       std::set<std::string>& ids) {
  v.mapping(node, kHintKeys, at, "a mapping with id, check or error, and text");
  ExerciseHint h;
  h.id = v.text(node, "id", at + ".id");
  if (!ids.insert(h.id).second)
    v.fail(node["id"].Mark(), at + ".id", "duplicate hint id " + lab::quote(h.id));
  read_match(v, node, at, h);
  h.text = v.text(node, "text", at + ".text");
  if (node["api"]) h.api = v.text(node, "api", at + ".api");
  if (node["code"]) {
    if (!node["api"])
      v.fail(node["code"].Mark(), at + ".code", "comes after an api step, and this hint has none");
    h.code = v.text(node, "code", at + ".code");
  }
  return h;
}

// An exercise's own hint takes the place of the library error of its id (shared): it must be a hint for an
// error too, the exercise's words for it. One matched by a check would hide the library's hint from that
// exercise, whose learners then got none for that error.
// `shared`: the library errors by id (a lookup, not a scan: 20,000 of them made this quadratic).
using SharedHints = std::map<std::string, const ExerciseHint*>;
void check_shadowing(const YamlFile& v, const YAML::Node& node, const std::string& at, const ExerciseHint& h,
                     const SharedHints& shared) {
  if (const auto lib = shared.find(h.id); lib != shared.end() && h.error.empty())
    v.fail(node["id"].Mark(), at + ".id",
           "hint id " + lab::quote(h.id) + " is a library error's (" + lab::quote(lib->second->error) +
               "), and this hint names a failed check: give it an id of its own");
}

// exercises[i]; `labs_seen` holds the labs of the exercises before it, `shared` the library errors.
ExerciseInfo read_exercise(const YamlFile& v, const YAML::Node& node, size_t i, const LabLookup& labs,
                           std::set<std::string>& labs_seen, const SharedHints& shared) {
  const std::string at = fmt::format("exercises[{}]", i);
  v.mapping(node, kExerciseKeys, at, "a mapping with lab, title, lab_runs and hints");
  ExerciseInfo e;
  e.lab = v.text(node, "lab", at + ".lab");
  const auto ref = labs(e.lab);
  if (!ref)
    v.fail(node["lab"].Mark(), at + ".lab", "no lab named " + lab::quote(e.lab) + " (see: amp-lab list)");
  if (!ref->has_starter)
    v.fail(node["lab"].Mark(), at + ".lab",
           fmt::format("lab {} has no starter (labs/{}/exercise.cpp) for the learner to begin from",
                       lab::quote(e.lab), ref->stem));
  if (!labs_seen.insert(e.lab).second)
    v.fail(node["lab"].Mark(), at + ".lab", "a second exercise for lab " + lab::quote(e.lab));
  e.id = fmt::format("{:02d}", ref->number);
  e.stem = ref->stem;
  e.title = v.text(node, "title", at + ".title");
  if (node["lab_runs"]) {
    const YAML::Node keys = v.list(node["lab_runs"], at + ".lab_runs");
    for (size_t k = 0; k < keys.size(); ++k) {
      const std::string field = fmt::format("{}.lab_runs[{}]", at, k);
      std::string key = v.text(keys[k], field);
      if (!e.judges_learner(key)) v.fail(keys[k].Mark(), field, "check " + lab::quote(key) + " listed twice");
      e.lab_runs.push_back(std::move(key));
    }
  }
  if (!node["hints"]) return e;
  const YAML::Node hints = v.list(node["hints"], at + ".hints");
  std::set<std::string> ids;
  for (size_t k = 0; k < hints.size(); ++k) {
    const std::string hint_at = fmt::format("{}.hints[{}]", at, k);
    e.hints.push_back(read_hint(v, hints[k], hint_at, ids));
    check_shadowing(v, hints[k], hint_at, e.hints.back(), shared);
  }
  return e;
}

}  // namespace

std::vector<ExerciseInfo> load_exercises(const std::string& path, const LabLookup& labs) {
  return parse_exercises(read_data_file(path, kExercisesFile), path, labs);
}

std::vector<ExerciseInfo> parse_exercises(std::string text, const std::string& name, const LabLookup& labs) {
  const YamlFile v(std::move(text), name, kExercisesFile);
  const YAML::Node& root = v.root(kExercisesKeys);
  const YAML::Node list = v.list(v.required(root, "exercises", "exercises"), "exercises");
  std::vector<ExerciseHint> hints;  // library_errors, read first: an exercise's hint may take one's place
  if (root["library_errors"]) {
    const YAML::Node shared = v.list(root["library_errors"], "library_errors");
    std::set<std::string> ids;
    for (size_t k = 0; k < shared.size(); ++k) {
      const std::string at = fmt::format("library_errors[{}]", k);
      if (shared[k].IsMap() && shared[k]["check"])
        v.fail(shared[k]["check"].Mark(), at + ".check",
               "a library error is matched by its error words only");
      ExerciseHint h = read_hint(v, shared[k], at, ids);
      h.shared = true;
      hints.push_back(std::move(h));
    }
  }
  SharedHints by_id;
  for (const ExerciseHint& h : hints) by_id.emplace(h.id, &h);
  std::vector<ExerciseInfo> exercises;
  std::set<std::string> labs_seen;
  for (size_t i = 0; i < list.size(); ++i)
    exercises.push_back(read_exercise(v, list[i], i, labs, labs_seen, by_id));
  // Each exercise's own hints, then every library error whose id none of them takes: looked up in a set of
  // the exercise's own ids, so the merge is linear in the library errors.
  for (ExerciseInfo& e : exercises) {
    std::set<std::string> own;
    for (const ExerciseHint& h : e.hints) own.insert(h.id);
    for (const ExerciseHint& h : hints)
      if (!own.count(h.id)) e.hints.push_back(h);
  }
  return exercises;
}

}  // namespace runner
