// rpb/train/config/sweep_config.cpp: the [sweep] table: its methods, seeds, tasks and figures, and the points of its
// [[sweep.grid]] tables (document.h read_sweep).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/text.h"
#include "nn/position.h"
#include "train/config/document.h"
#include "train/config/toml_table.h"
#include "train/data/task_registry.h"

namespace rpb {

using namespace run_limits;

namespace {

// sweep.figures: false (none), true (the default formats) or a list of formats.
void read_figures(toml_config::Table& sweep, SweepConfig& s) {
  if (sweep.holds_boolean("figures")) {
    bool on = true;
    sweep.get("figures", on);
    if (!on) s.figures.clear();
    return;
  }
  sweep.get("figures", s.figures, {"svg", "pdf", "png"}, 3);
}

// sweep.labels / sweep.task_labels (`key`): a table of display names, each key one of `known` (the sweep's methods,
// its tasks), each value 1 to kMaxLabelBytes bytes of printable text.
std::map<std::string, std::string> read_labels(toml_config::Table& sweep, const toml::table* st, const char* key,
                                               const std::vector<std::string>& known, const std::string& source,
                                               const toml_config::OverrideMap& overrides) {
  std::map<std::string, std::string> out;
  sweep.ignore(key);
  const toml::table* labels = st ? toml_config::subtable(*st, key, source, overrides) : nullptr;
  if (!labels) return out;
  const std::string what = std::string(key) == "labels" ? "method" : "task";
  for (const auto& [name, node] : *labels) {
    const std::string k(name.str());
    const std::string at = "\"" + printable(k) + "\": ";
    if (std::find(known.begin(), known.end(), k) == known.end())
      sweep.fail_at(key, at + "expected a " + what + " of the sweep (" + join(known, ", ") + ")");
    const auto* v = node.as_string();
    if (!v) sweep.fail_at(key, at + "expected a string, found " + toml_config::type_name(node));
    const std::string text = v->get();
    if (text.empty() || printable(text, kMaxLabelBytes) != text)
      sweep.fail_at(key, at + "expected 1 to " + std::to_string(kMaxLabelBytes) +
                             " bytes of printable text (no control characters or invalid UTF-8), found \"" +
                             printable(text, 60) + "\"");
    out[k] = text;
  }
  return out;
}

}  // namespace

void read_sweep(toml_config::Table& sweep, const toml::table* st, const GridContext& where, RunConfig& c) {
  std::vector<std::string> methods;
  sweep.get("methods", methods, {}, kMaxSweepMethods);
  sweep.get("seeds", c.sweep.seeds, kMaxSweepSeeds);
  sweep.get("tasks", c.sweep.tasks, data::task_names(), data::task_names().size());
  read_figures(sweep, c.sweep);
  sweep.get("learned_threshold", c.sweep.learned_threshold, 0.0, 1.0, /*lo_open=*/true);
  const std::vector<std::string> tasks = c.sweep.tasks.empty() ? std::vector<std::string>{c.task.kind} : c.sweep.tasks;
  const auto grid_task =
      std::find_if(tasks.begin(), tasks.end(), [](const std::string& t) { return data::task_dims(t) == 2; });
  const bool grid_sweep = grid_task != tasks.end();
  if (grid_sweep && tasks.size() > 1)
    sweep.fail_at("tasks", *grid_task + " needs the 2-D schemes; sweep it on its own");
  const int64_t dims = grid_sweep ? 2 : 1;
  const toml::node* grids = st ? st->get("grid") : nullptr;
  sweep.ignore("grid");
  // The default sweep: every scheme of the tasks' dims; with grids, none besides their points.
  if (!sweep.has("methods") && !grids) methods = nn::scheme_names(dims);
  c.sweep.methods.clear();
  for (const std::string& m : methods) c.sweep.methods.push_back(parse_method(sweep, m, dims));
  std::size_t points = 0;
  if (grids) {
    const std::vector<SweepMethod> grid = grid_methods(*grids, {where.source, where.applied, dims, where.accepted, c.sweep.methods});
    points = grid.size();  // <= kMaxSweepRuns
    c.sweep.methods.insert(c.sweep.methods.end(), grid.begin(), grid.end());
  }
  std::vector<std::string> names;
  for (const SweepMethod& m : c.sweep.methods) names.push_back(m.name());
  c.sweep.labels = read_labels(sweep, st, "labels", names, where.source, where.applied);
  c.sweep.task_labels = read_labels(sweep, st, "task_labels", tasks, where.source, where.applied);
  const std::size_t runs = c.sweep.methods.size() * tasks.size() * c.sweep.seeds.size();  // <= 4352 x 4 x 1000
  if (runs > kMaxSweepRuns)
    sweep.fail_at("seeds", std::to_string(c.sweep.methods.size()) + " methods" +
                               (grids ? " (" + std::to_string(points) + " of them [[sweep.grid]] points)" : "") + " x " +
                               std::to_string(tasks.size()) + " tasks x " + std::to_string(c.sweep.seeds.size()) +
                               " seeds make " + std::to_string(runs) + " runs; expected at most " +
                               std::to_string(kMaxSweepRuns) + " runs in one sweep");
  sweep.done();
}


}  // namespace rpb
