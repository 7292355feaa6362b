// rpb/train/sweep/results.h: what `rpb extrapolate` prints and writes from a sweep's results.
#pragma once

#include <string>

#include "train/sweep/sweep.h"

namespace rpb {

/// The seed's table: Method | Position params | PPL at train length | 2x | ... (mean +- std over seeds).
std::string format_table(const SweepResult& r);
/// results.csv's provenance columns, after mean_attention_distance: per row, the run its numbers come from
/// (SweepRunRecord: run_folder, config_digest, checkpoint, checkpoint_sha256), then what wrote the file
/// (train/io/provenance.h: rpb_version, commit, command, date; the same on every row). scripts/same_results.sh
/// ignores them when it compares two builds.
inline constexpr const char* kResultsCsvProvenanceColumns[] = {
    "run_folder", "config_digest", "checkpoint", "checkpoint_sha256", "rpb_version", "commit", "command", "date"};

/// Writes results.csv and results.json into `dir` (atomically, each; the figures are cli/results_svg.h's; results.json's
/// format and its reader are train/sweep/results_json.h's). Per row, seed and length, results.json carries the attention diagnostics ("attention": {"mean_distance": [[per layer, per head]],
/// "entropy": [[...]], "mean_distance_overall", "entropy_overall"} or null) and, per length, the mean and std over
/// seeds of the mean attention distance ("mean_attention_distance"); results.csv its column
/// mean_attention_distance (the mean over layers and heads; empty where not measured). Both carry the provenance
/// (current_provenance(), one date for both): results.json its "provenance" block and per row and seed its "runs",
/// results.csv its kResultsCsvProvenanceColumns (a field holding a comma, quote or line break in double quotes).
void write_results(const SweepResult& r, const std::string& dir);

}  // namespace rpb
