// rpb/cli/results_svg.h: the sweep's pictures, results.svg and attention.svg (written by write_result_figures,
// beside train/sweep/results.h's results.csv and results.json).
#pragma once

#include <string>

#include "train/sweep/sweep.h"

namespace rpb {

/// Perplexity against evaluation length, one panel per task: a log y axis labelled "perplexity" with 1-2-5
/// ticks, a log2 x axis labelled 1x, 2x, ... with the lengths under them, per method a line with a marker at
/// every defined point and a band of mean ± std over the seeds, a hollow marker on the bottom edge where a
/// method cannot run (n/a, also named in its legend entry), and the optimal perplexity as a dashed line with
/// its own legend entry.
std::string results_svg(const SweepResult& r);

/// The mean attention distance (over layers and heads) against evaluation length, drawn as results_svg draws
/// perplexity (log axes, one panel per task, a line per method with a band of mean ± std over the seeds, a hollow
/// marker where a method has no value: it cannot run there, or run.eval_diagnostics was off); no
/// optimum line.
std::string attention_svg(const SweepResult& r);

/// Writes results.svg and attention.svg into `dir` (atomically, each).
void write_result_figures(const SweepResult& r, const std::string& dir);

}  // namespace rpb
