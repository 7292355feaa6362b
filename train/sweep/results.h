// rpb/train/sweep/results.h: what `rpb extrapolate` prints and writes from a sweep's results.
#pragma once

#include <string>

#include "train/sweep/sweep.h"

namespace rpb {

/// The seed's table: Method | Position params | PPL at train length | 2x | ... (mean +- std over seeds).
std::string format_table(const SweepResult& r);
/// Writes results.csv and results.json into `dir` (atomically, each; the figures are cli/plot_request.h's; results.json's
/// format and its reader are train/sweep/results_json.h's). Per row, seed and length, results.json carries the attention diagnostics ("attention": {"mean_distance": [[per layer, per head]],
/// "entropy": [[...]], "mean_distance_overall", "entropy_overall"} or null) and, per length, the mean and std over
/// seeds of the mean attention distance ("mean_attention_distance"); results.csv its column
/// mean_attention_distance (the mean over layers and heads; empty where not measured).
void write_results(const SweepResult& r, const std::string& dir);

}  // namespace rpb
