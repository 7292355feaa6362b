// rpb/cli/plot_request.cpp: see plot_request.h.
#include "cli/plot_request.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "cli/python_runner.h"
#include "core/text.h"
#include "train/run/run_folder.h"
#include "train/sweep/labels.h"
#include "train/sweep/results_json.h"

namespace fs = std::filesystem;

namespace rpb {

namespace {

using nlohmann::ordered_json;

ordered_json ylim_json(const YLimits& ylim) {
  return ylim ? ordered_json::array({ylim->first, ylim->second}) : ordered_json();
}

// A metric's bound: a number, or null for none.
ordered_json bound_json(const std::optional<double>& b) { return b ? ordered_json(*b) : ordered_json(nullptr); }

// Per results file, what its rows and tasks are called (train/sweep/labels.h, as read_sweep_results makes them:
// an older file's default labels made again): {"rows": [label per row], "tasks": {task: label}}; null for a file rpb
// cannot read (the module reports it).
ordered_json labels_json(const std::vector<std::string>& files) {
  ordered_json out = ordered_json::array();
  for (const std::string& file : files) {
    SweepResults r;
    try {
      r = read_sweep_results(fs::is_directory(file) ? (fs::path(file) / kResultsJsonName).string() : file);
    } catch (const Error&) {
      out.push_back(nullptr);
      continue;
    }
    ordered_json rows = ordered_json::array(), tasks = ordered_json::object();
    for (const SweepResultsRow& row : r.rows) {
      rows.push_back(escape_label(row.label, LabelFormat::text));
      tasks[row.task] = escape_label(task_label(r.task_labels, row.task), LabelFormat::text);
    }
    out.push_back({{"rows", rows}, {"tasks", tasks}});
  }
  return out;
}

}  // namespace

ordered_json plot_request(const std::string& kind, ordered_json block) {
  ordered_json request = {{"format", "rpb-plot-1"}, {"kind", kind}, {"outputs", ordered_json::array()},
                          {"styles", plot_styles()}};
  request[kind] = std::move(block);
  return request;
}

ordered_json sweep_block(const SweepFigure& f) {
  ordered_json known = ordered_json::array();
  for (const SweepMetric& m : sweep_metrics())
    known.push_back({{"key", m.key},         {"label", m.label},     {"unit", m.unit},
                     {"log", m.log},         {"field", m.field},     {"entry", m.entry},
                     {"optimum", m.optimum}, {"learned", m.learned}, {"lower", bound_json(m.lower)},
                     {"upper", bound_json(m.upper)}, {"scale", m.scale}, {"on_request", m.on_request}});
  return {{"results", f.results}, {"tasks", f.tasks},          {"methods", f.methods}, {"lengths", f.lengths},
          {"metrics", f.metrics}, {"ylim", ylim_json(f.ylim)}, {"against", f.against}, {"known_metrics", known},
          {"labels", labels_json(f.results)}};
}

ordered_json curves_block(const std::vector<CurveRun>& runs, const std::string& x, const YLimits& ylim) {
  ordered_json list = ordered_json::array();
  for (const CurveRun& r : runs)
    list.push_back({{"label", r.label},
                    {"method", r.method.empty() ? r.label : r.method},
                    {"scheme", r.scheme},
                    {"metrics_csv", r.metrics_csv}});
  return {{"runs", list}, {"x", x}, {"ylim", ylim_json(ylim)}};
}

std::string sweep_figure_name(const std::string& format) { return "results." + format; }

bool draw_sweep_figures(const std::string& dir, const std::vector<std::string>& formats) {
  if (formats.empty()) return false;
  SweepFigure f;
  f.results = {fs::absolute(fs::path(dir) / kResultsJsonName).string()};
  std::vector<PlotOutput> outputs;
  for (const std::string& format : formats) outputs.push_back({(fs::path(dir) / sweep_figure_name(format)).string()});
  try {
    draw_figures(plot_request("sweep", sweep_block(f)), outputs);
  } catch (const PlotUnavailable& e) {
    spdlog::warn("the sweep's figures were not drawn: {} (the results stand; draw them later with `rpb plot {}`)",
                 terminal_text(e.message()), printable(dir));
    return false;
  }
  return true;
}

}  // namespace rpb
