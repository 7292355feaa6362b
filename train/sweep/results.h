// rpb/train/sweep/results.h: what `rpb extrapolate` prints and writes from a sweep's results.
#pragma once

#include <string>

#include "train/sweep/results_json.h"
#include "train/sweep/sweep.h"

namespace rpb {

/// The terminal table, a markdown table per task: Method | Position params | PPL at train length | 2x | ... (mean ±
/// std over seeds), and under each table the line describing it ("Task: markov (train length 64, 2 seeds,
/// perplexity mean ± std); optimal perplexity 8.127"), and when a row of the task was scored by sliding windows a
/// line naming each row's protocol ("Protocol: sliding window, stride 32 (every row)").
///
/// A task whose rows have text bytes (MethodResult::bytes, a text task) gets a second table after it, bits per
/// byte: Method | Position params | Bits per byte at train length | 2x | ... (mean ± std, 3 decimals), and the line
/// "Bits per byte: text (of the text the scored tokens stand for: NLL x tokens / (bytes x ln 2), mean ± std;
/// comparable across tokenizers)". A task whose rows have an accuracy (passkey) says "perplexity of the answer
/// tokens" in its task line and gets an accuracy table: Method | Position params | Learned | Accuracy at train
/// length | 2x | ... in percent ("97.3 ± 1.2"), Learned the seeds whose accuracy at the train length is at least
/// kLearnedAccuracy ("2/3"); the train length's cell over every seed, the cells past it over the learned seeds only
/// (accuracy_stats), "not learned" there for a row where no seed learned the task (never a number, which would read
/// as failing to extrapolate); the line under it: "Accuracy: passkey (accuracy of greedy decoding of the answer, %
/// mean ± std; past the train length over the seeds that learned the task (>= 95% at the train length))", the threshold
/// [sweep] learned_threshold's. Where a seed did not learn the task, a table of the accuracy over every seed follows,
/// learned or not, marked as such ("Accuracy, every seed ..."): a pilot's read past the train length.
/// A task whose rows have a per-token accuracy (an algorithmic task, train/data/algorithmic.h) gets instead of the
/// accuracy table two over every seed: Method | Position params | Score | Token accuracy at train length | 2x | ...
/// (Score: the mean per-token accuracy over the lengths past the train length, SweepResultsRow::score_stats), and
/// Method | Position params | Exact match at train length | 2x | ..., each in percent with the line naming it.
/// The table is made from what results.json holds (SweepResults, train/sweep/results_json.h), so that `rpb results`
/// prints the same table from a sweep's results.json as `rpb extrapolate` printed after it.
std::string format_table(const SweepResults& r);
/// format_table(sweep_results(r)).
std::string format_table(const SweepResult& r);
/// results.csv's provenance columns, after the numbers (the last: accuracy): per row, the run its numbers come from
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
/// Then the columns bytes, bits_per_byte (a text task's: the text bytes the scored tokens stand for, and NLL x tokens
/// / (bytes x ln 2)) and accuracy (passkey's exact-match share, 0 to 1), each empty where not defined (another task,
/// or a length the method cannot run at); results.json holds them too, with passkey's accuracy per depth of the key
/// (train/sweep/results_json.h).
///
/// Then the column label, the row's method as the tables name it (MethodResult::shown_label: its [sweep] labels
/// entry or its default label), a field in double quotes when it holds a comma; and accuracy_every_seed, on the
/// aggregated rows of a passkey task the mean and std of the accuracy over every seed, learned or not (the
/// accuracy column's counts past the train length the learned seeds only), empty elsewhere; and token_accuracy, an
/// algorithmic task's per-token accuracy (its accuracy column is then the exact match, over every seed), empty
/// elsewhere.
///
/// results.csv has a row per task x method x seed x length, then the aggregated rows: per task x method x length, a
/// row whose `seed` is "mean" and one whose `seed` is "std", holding the mean and the sample std over the seeds
/// (mean_std: the seeds with a value) of perplexity, nll, tokens, mean_attention_distance, bytes and bits_per_byte,
/// and of accuracy as the table reports it (accuracy_stats: past the train length over the seeds that learned the
/// task only), empty where no seed has one (n/a). The mean row's perplexity is the table's and results.json's
/// "mean", its accuracy the table's and "accuracy_stats"'s. position_params, multiplier, length and
/// optimal_perplexity are the seed rows' on both; the run columns (run_folder .. checkpoint_sha256) are empty on
/// them, the file's provenance columns filled. Keep the per-seed rows alone with a filter on `seed`
/// (pandas: df[~df.seed.isin(["mean", "std"])]).
void write_results(const SweepResult& r, const std::string& dir);

}  // namespace rpb
