// rpb/train/config/sweep_config.cpp: the [sweep] table: its methods, seeds, tasks and figures, and the points of its
// [[sweep.grid]] tables (document.h read_sweep).
#include <algorithm>
#include <string>
#include <vector>

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

}  // namespace

void read_sweep(toml_config::Table& sweep, const toml::table* st, const GridContext& where, RunConfig& c) {
  std::vector<std::string> methods;
  sweep.get("methods", methods, {}, kMaxSweepMethods);
  sweep.get("seeds", c.sweep.seeds, kMaxSweepSeeds);
  sweep.get("tasks", c.sweep.tasks, data::task_names(), data::task_names().size());
  read_figures(sweep, c.sweep);
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
