// rpb/cli/plot_request.h: the plot requests of a sweep's figure and of runs' training curves (python/rpb_plot/,
// run by cli/python_runner.h), and the sweep's own figures (results.svg, results.pdf beside results.json).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rpb {

/// The y limits of a figure (--ylim LO,HI), or none (the data's range).
using YLimits = std::optional<std::pair<double, double>>;

/// What a sweep figure draws; an empty list means all.
struct SweepFigure {
  std::vector<std::string> results;  // absolute paths of results.json files
  std::vector<std::string> tasks;    // task kinds
  std::vector<std::string> methods;  // method names as results.json rows write them ("t5@untrained=nearest")
  std::vector<int64_t> lengths;      // evaluation lengths in tokens (multipliers x train length)
  std::vector<std::string> metrics;  // keys of sweep_metrics() (train/sweep/results_json.h): "perplexity", ...
  YLimits ylim;
  std::string against = "length";    // "length", or a swept setting of the rows' "settings" ("optim.lr")
};

/// One run's curves.
struct CurveRun {
  std::string label;        // in the legend: the run folder's name ("t5", or "t5@lr=0.001/seed0" in a sweep)
  std::string scheme;       // its position scheme (its config's position.scheme)
  std::string metrics_csv;  // absolute path of its metrics.csv
  /// Its method as results.json names it ("t5@lr=0.001" for a sweep's run: its colour there), or its scheme
  /// for a run no results.json lists; "": the label.
  std::string method;
};

/// A request of `kind` ("sweep", "curves", "bias") holding `block` under that name, with the registry's styles
/// (plot_styles) and no outputs yet (draw_figures fills them).
nlohmann::ordered_json plot_request(const std::string& kind, nlohmann::ordered_json block);

/// The "sweep" block: {"results", "tasks", "methods", "lengths", "metrics", "ylim" (null or [lo, hi]), "against",
/// "known_metrics": [{"key", "label", "unit", "log", "field", "entry", "optimum", "learned", "lower", "upper",
/// "scale"} per sweep_metrics() entry], "labels": [{"rows": [label per row], "tasks": {task: label}} or null per
/// results file]} (SweepMetric, train/sweep/results_json.h; the labels as train/sweep/labels.h makes them, null for a
/// file rpb cannot read).
nlohmann::ordered_json sweep_block(const SweepFigure& f);

/// The "curves" block: {"runs": [{"label", "method", "scheme", "metrics_csv"}], "x": "step" | "tokens", "ylim"}.
nlohmann::ordered_json curves_block(const std::vector<CurveRun>& runs, const std::string& x, const YLimits& ylim);

/// The names results.<format> of a sweep's figures.
std::string sweep_figure_name(const std::string& format);

/// Draws the sweep's figures from `dir`/results.json into `dir`/results.<format> for each of `formats` (sweep.figures:
/// "svg", "pdf", "png"); none when `formats` is empty. Without Python or matplotlib it warns (naming how to install
/// it) and returns false: the sweep's results stand without figures. Other failures throw rpb::Error.
bool draw_sweep_figures(const std::string& dir, const std::vector<std::string>& formats);

}  // namespace rpb
