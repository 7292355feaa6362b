// rpb/train/sweep/results.h: what `rpb extrapolate` prints and writes from a sweep's results.
#pragma once

#include <string>

#include "train/sweep/sweep.h"

namespace rpb {

/// The terminal table, a markdown table per task: Method | Position params | PPL at train length | 2x | ... (mean ±
/// std over seeds), and under each table the line describing it ("Task: markov (train length 64, 2 seeds,
/// perplexity mean ± std); optimal perplexity 8.127"), and when a row of the task was scored by sliding windows a
/// line naming each row's protocol ("Protocol: sliding window, stride 32 (every row)").
std::string format_table(const SweepResult& r);
/// results.csv's provenance columns, after mean_attention_distance: per row, the run its numbers come from
/// (SweepRunRecord: run_folder, config_digest, checkpoint, checkpoint_sha256), then what wrote the file
/// (train/io/provenance.h: rpb_version, commit, command, date; the same on every row). scripts/same_results.sh
/// ignores them when it compares two builds.
inline constexpr const char* kResultsCsvProvenanceColumns[] = {
    "run_folder", "config_digest", "checkpoint", "checkpoint_sha256", "rpb_version", "commit", "command", "date"};

/// Writes results.csv, results.json and results.tex into `dir` (atomically, each; the figures are cli/plot_request.h's;
/// results.json's format and its reader are train/sweep/results_json.h's, results.tex's
/// train/sweep/results_tex.h's). Per row, seed and length, results.json carries the attention diagnostics
/// ("attention": {"mean_distance": [[per layer, per head]], "entropy": [[...]], "mean_distance_overall",
/// "entropy_overall"} or null) and, per length, the mean and std over seeds of the mean attention distance
/// ("mean_attention_distance"); results.csv its column mean_attention_distance (the mean over layers and heads;
/// empty where not measured). results.json and results.csv carry the provenance (current_provenance(), one date
/// for all files): results.json its "provenance" block and per row and seed its "runs", results.csv its
/// kResultsCsvProvenanceColumns (a field holding a comma, quote or line break in double quotes).
///
/// results.csv's protocol and eval_stride columns, after mean_attention_distance, say how each row's numbers were
/// scored: "nonoverlapping" with an empty eval_stride, or "sliding_window" with its stride (MethodResult::eval_stride).
///
/// results.csv has a row per task x method x seed x length, then the aggregated rows: per task x method x length, a
/// row whose `seed` is "mean" and one whose `seed` is "std", holding the mean and the sample std over the seeds
/// (mean_std: the seeds with a value) of perplexity, nll, tokens and mean_attention_distance (empty where no seed has
/// one: n/a). The mean row's perplexity is the table's and results.json's "mean". position_params, multiplier,
/// length and optimal_perplexity are the seed rows' on both; the run columns (run_folder .. checkpoint_sha256) are
/// empty on them, the file's provenance columns filled. Keep the per-seed rows alone with a filter on `seed`
/// (pandas: df[~df.seed.isin(["mean", "std"])]).
void write_results(const SweepResult& r, const std::string& dir);

}  // namespace rpb
