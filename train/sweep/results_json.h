// rpb/train/sweep/results_json.h: the sweep's results.json, written and read back through one struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train/io/json_text.h"
#include "train/io/provenance.h"
#include "train/run/eval_result.h"
#include "train/sweep/sweep.h"

namespace rpb {

/// The format results.json's "format" key names. read_sweep_results reads the earlier ones too: "rpb-results-6"
/// (without "task_labels"; its rows' labels, all default ones then, are made again as SweepMethod::label makes them
/// now, of the row's method and settings), "rpb-results-5"
/// (rows without "bytes", "accuracy" and the other per-length metrics of rpb-results-6: no bytes, no accuracy),
/// "rpb-results-4" (without their "protocol" and "eval_stride" either: every row nonoverlapping), "rpb-results-3"
/// (without their "scheme" either), "rpb-results-2" (without "provenance" and the rows' "runs" either) and a
/// results.json without a format (numbers with 10 significant digits, the keys of rpb-results-2).
inline constexpr const char* kSweepResultsFormat = "rpb-results-7";
/// The bins of a results.json row's per-position loss at each length (SweepResultsRow::position_loss): positions are
/// averaged in bins of a whole width so that at most this many remain.
inline constexpr int64_t kPositionLossBins = 64;
/// The largest results.json read_sweep_results reads.
inline constexpr std::size_t kMaxSweepResultsBytes = std::size_t(256) << 20;

/// One row of results.json: a method on a task, over the sweep's seeds and lengths.
struct SweepResultsRow {
  std::string task;                                         // "markov"
  std::string method;                                       // SweepMethod::name() ("t5@buckets16")
  std::string scheme;  // SweepMethod::scheme, the registered scheme ("t5"); "" when read from an earlier format
  std::string label;  // its name in the results (method_label, train/sweep/labels.h): the table's Method column
  std::vector<ConfigSetting> settings;  // the method's settings in order ({"optim.lr", 0.001}); empty for a plain
                                        // method; read back with text setting_text(value)
  int64_t position_params = 0;
  int64_t eval_stride = 0;  // the protocol of its numbers (MethodResult::eval_stride): 0 nonoverlapping, S sliding
                            // windows advanced by S; 0 when read from an earlier format
  std::optional<double> optimal_perplexity;                 // exp(entropy rate) where the task knows it
  std::vector<std::vector<std::optional<double>>> perplexity;  // [seed][length]; nullopt: cannot run there
  std::vector<std::vector<std::optional<double>>> nll;         // [seed][length]: mean NLL in nats
  std::vector<std::vector<int64_t>> tokens;                    // [seed][length]: target tokens (0 where nll is nullopt)
  std::vector<std::vector<AttentionDiagnostics>> attention;  // [seed][length]: empty where not measured
  std::vector<SweepRunRecord> runs;  // [seed]: the run folder, config digest and checkpoint of each seed; empty when
                                     // read from an earlier format
  /// [seed][length], each the shape of perplexity (MethodResult's): the text bytes the scored tokens stand for (0
  /// for a task without text bytes and where nll is nullopt), passkey's accuracy (nullopt for the other tasks), its
  /// accuracy per depth of the key (kDepthBins values; empty for the other tasks) and its samples per depth bin (0
  /// for the other tasks). Read from an earlier format: 0, nullopt and empty.
  std::vector<std::vector<int64_t>> bytes;
  std::vector<std::vector<std::optional<double>>> accuracy;
  std::vector<std::vector<std::vector<double>>> depth_accuracy;
  std::vector<std::vector<int64_t>> samples_per_depth;
  /// [seed]: MethodResult::trained_accuracy (a passkey row with evaluation settings: its trained run's accuracy at
  /// the train length, which says whether the seed learned the task); empty for every other row.
  std::vector<std::optional<double>> trained_accuracy;
  double learned_threshold = kLearnedAccuracy;  // the sweep's ([sweep] learned_threshold): learned() compares to it
  /// [seed][length]: an algorithmic task's per-token accuracy (MethodResult::token_accuracy): "token_accuracy". Its
  /// `accuracy` is then the exact match, which counts every seed (learned() is true for each seed with a value).
  std::vector<std::vector<std::optional<double>>> token_accuracy;
  /// [length]: the per-token loss by position pooled over the seeds (MethodResult::pooled_position_loss) in at most
  /// kPositionLossBins bins: "position_loss", written for a row where some length has it (null at the lengths
  /// without). Empty when no length has it.
  std::vector<std::optional<data::BinnedPositionLoss>> position_loss;

  /// [length]: the mean and the std over the seeds (mean_std, train/sweep/sweep.h) of the perplexity, and of the
  /// mean attention distance (AttentionDiagnostics::mean_distance_overall); nullopt where no seed has a value.
  /// Derived from perplexity and attention: results.json's "mean", "std" and "mean_attention_distance".
  std::vector<std::optional<double>> perplexity_mean() const;
  std::vector<std::optional<double>> perplexity_std() const;
  std::vector<std::optional<double>> distance_mean() const;
  std::vector<std::optional<double>> distance_std() const;
  /// Seed s's bits per byte at length j (LengthResult::bits_per_byte of nll, tokens and bytes); nullopt where nll is
  /// or bytes is 0.
  std::optional<double> bits_per_byte(std::size_t s, std::size_t j) const;
  /// [length]: the mean and std over the seeds of bits_per_byte: results.json's "bits_per_byte_stats".
  std::vector<std::optional<double>> bits_per_byte_mean() const;
  std::vector<std::optional<double>> bits_per_byte_std() const;
  /// [length]: the mean and std of the accuracy as the sweep reports it (accuracy_stats, train/sweep/sweep.h): at
  /// the train length over every seed, past it over the seeds that learned the task: "accuracy_stats".
  std::vector<std::optional<double>> accuracy_mean() const;
  std::vector<std::optional<double>> accuracy_std() const;
  /// [seed]: whether the seed learned the task (learned_seeds, train/sweep/sweep.h): "learned".
  std::vector<bool> learned() const;
  /// [length]: the mean and std of the accuracy over every seed, learned or not (a pilot's read past the train
  /// length, shown marked as such): "accuracy_every_seed_stats".
  std::vector<std::optional<double>> accuracy_every_seed_mean() const;
  std::vector<std::optional<double>> accuracy_every_seed_std() const;
  /// Whether a seed of the row has an accuracy and did not learn the task: the accuracy over every seed differs
  /// from accuracy_mean past the train length.
  bool has_unlearned_seed() const;
  /// Whether a seed and length has text bytes (> 0), and whether one has an accuracy: the row's task reports bits
  /// per byte, and passkey accuracy.
  bool has_bytes() const;
  bool has_accuracy() const;
  /// Whether a seed and length has a per-token accuracy: the row's task is algorithmic.
  bool has_token_accuracy() const;
  /// [length]: the mean and std of the per-token accuracy over every seed: "token_accuracy_stats".
  std::vector<std::optional<double>> token_accuracy_mean() const;
  std::vector<std::optional<double>> token_accuracy_std() const;
  /// Seed s's per-token accuracy at length j; nullopt where none.
  std::optional<double> token_accuracy_at(std::size_t s, std::size_t j) const;
  /// Seed s's score at the sweep's `multipliers`: its per-token accuracy's mean over the lengths past the train length
  /// (past_training_mean, train/run/eval_result.h); nullopt where none has a value.
  std::optional<double> score(std::size_t s, const std::vector<int64_t>& multipliers) const;
  /// The mean and std of the score over the seeds with one: "score_stats".
  std::optional<std::pair<double, double>> score_stats(const std::vector<int64_t>& multipliers) const;
  /// The threshold learned() compares the first length's accuracy to (accuracy_threshold, train/sweep/sweep.h).
  double threshold() const { return accuracy_threshold(has_token_accuracy(), learned_threshold); }
};

/// A metric results.json rows hold per seed and evaluation length, drawn against length by `rpb plot`: sweep_metrics
/// is the one list of them, which `rpb plot --metric` checks against and python/rpb_plot/ reads from the plot request
/// (cli/plot_request.h sweep_block) to find each metric in the rows it draws. A metric rows come to hold (an accuracy
/// a task reports) is drawn by adding its entry there.
struct SweepMetric {
  std::string key;      // its name: `rpb plot --metric`, a request's "metrics" ("perplexity")
  std::string label;    // the y axis label ("mean attention distance")
  std::string unit;     // the y axis unit ("positions"), "" for none
  bool log = false;     // a log y axis (when every value is positive)
  std::string field;    // the row's key holding [[cell per length] per seed] ("perplexity", "attention")
  std::string entry;    // "": a cell is the value (or null); else the key of the value in a cell's object
  std::string optimum;  // the row's key of the value drawn as the metric's optimum line, "" for none
  std::string learned;  // the row's key of [true/false per seed]: past the first length only the seeds marked true
                        // are drawn (a row with none: "not learned" there, never a value); "" for every seed
  std::optional<double> lower, upper;  // the values the metric can take (perplexity >= 1, accuracy in [0, 1]):
                                       // a band of mean ± std is drawn within them; nullopt: unbounded
  double scale = 1.0;
  bool on_request = false;  // drawn only when `rpb plot --metric` names it, never by default  // drawn as value x scale, in `unit` (accuracy: stored 0-1, drawn in % with 100)
};

/// The metrics results.json rows hold, in the order figures draw them: perplexity, mean_attention_distance,
/// attention_entropy, bits_per_byte (text tasks), accuracy (passkey; drawn past the train length over the seeds
/// that learned the task, its "learned").
const std::vector<SweepMetric>& sweep_metrics();

/// Whether results.json row `row` holds a value (a number) of `metric` at some seed and length.
bool row_holds(const Json& row, const SweepMetric& metric);

/// What results.json holds.
struct SweepResults {
  std::string format = kSweepResultsFormat;  // as read ("" for the earlier, unversioned format)
  std::string name;                          // sweep.name
  int64_t train_length = 0;
  std::vector<int64_t> multipliers;
  std::vector<uint64_t> seeds;
  std::vector<SweepResultsRow> rows;
  /// task -> its name in the results ([sweep] task_labels, else task_label's default; train/sweep/labels.h); read
  /// from an earlier format: empty (task_label's defaults).
  std::map<std::string, std::string> task_labels;
  /// [sweep] learned_threshold: the passkey accuracy at the train length from which a seed counts as having learned
  /// the task (every row's learned_threshold); kLearnedAccuracy when read from a file without it.
  double learned_threshold = kLearnedAccuracy;
  Provenance provenance;  // the rpb, command and date that wrote the file (train/io/provenance.h); empty when read
                          // from an earlier format
};

/// The results of sweep `r` as results.json holds them, with `provenance` (write_results: current_provenance()).
SweepResults sweep_results(const SweepResult& r, const Provenance& provenance = {});

/// results.json's object:
///   {"format": "rpb-results-7",
///    "provenance": {"rpb_version": "0.1.0", "commit": "<40 hex>[-dirty]" | "unknown", "command": "...",
///                   "date": "2025-01-31T12:34:56Z"} (train/io/provenance.h),
///    "name": ..., "train_length": 64, "multipliers": [1, 2, 4], "seeds": [0, 1],
///    "task_labels": {"markov": "markov", "passkey_text": "passkey text"} (every task of the rows),
///    "learned_threshold": 0.95 ([sweep] learned_threshold),
///    "rows": [{"task": ..., "method": ..., "scheme": "t5" (the method's registered scheme), "label": ...,
///              "settings": {"optim.lr": 0.001, "position.max_distance": 64} ({} for a plain method),
///              "position_params": 32,
///              "protocol": "nonoverlapping" | "sliding_window", "eval_stride": null | 32 (null: nonoverlapping),
///              "runs": [{"seed": 0, "folder": "runs/quick/markov/t5/seed0", "config_digest": "<64 hex>",
///                        "checkpoint": "step_00000600.h5", "checkpoint_sha256": "<64 hex>" | null} per seed],
///              "optimal_perplexity": x | null,
///              "perplexity": [[per length] per seed], "nll": [[...]], "tokens": [[n | null]],
///              "mean": [per length], "std": [...],
///              "attention": [[null | {"mean_distance": [[per head] per layer], "entropy": [[...]],
///                                     "mean_distance_overall": x, "entropy_overall": y}]],
///              "mean_attention_distance": {"mean": [per length], "std": [...]},
///              "bytes": [[n | null per length] per seed] | null,
///              "bits_per_byte": [[x | null]] | null,
///              "bits_per_byte_stats": {"mean": [per length], "std": [...]} | null,
///              "accuracy": [[x | null]] | null,
///              "depth_accuracy": [[[kDepthBins values] | null per length] per seed] | null,
///              "samples_per_depth": [[n | null]] | null,
///              "accuracy_stats": {"mean": [per length], "std": [...]} | null,
///              "accuracy_every_seed_stats": {"mean": [per length], "std": [...]} | null (every seed, learned or not),
///              "learned": [true | false per seed] | null,
///              "trained_accuracy": [x | null per seed] | null (may be missing)}, ...]}
/// "mean", "std" and "mean_attention_distance" are SweepResultsRow's perplexity_mean ... distance_std. Values that
/// are not finite or not defined are null; tokens are null where nll is.
/// Every row of rpb-results-6 has the keys from "bytes" on: a row's four bytes keys ("bytes" .. "bits_per_byte_stats")
/// are null when no seed and length of it has text bytes (a task without a tokenizer), its five accuracy keys
/// ("accuracy" .. "learned") null when none has an accuracy (a task other than passkey). Inside a row that has them,
/// bytes and samples_per_depth are null where nll is (0 in SweepResultsRow), a depth_accuracy cell null where the
/// accuracy is. "bits_per_byte" is nll * tokens / (bytes * ln 2) per cell (SweepResultsRow::bits_per_byte),
/// "bits_per_byte_stats" its mean and std over the seeds; "learned" says per seed whether its accuracy at the first
/// length (the train length) is >= kLearnedAccuracy, or for a row with "trained_accuracy" (a row with evaluation
/// settings: its trained run's accuracy at the train length, scored as trained) whether that one is; a row without
/// it has null there or lacks the key (written before it existed). "accuracy_stats" is the mean and std of the accuracy as
/// the tables print it: at the first length over every seed, past it over the learned seeds only (null where there
/// is none). The derived keys ("bits_per_byte", the "_stats", "learned") are not read back.
Json sweep_results_object(const SweepResults& r);

/// The results `json` holds; `source` names it in errors ("sweep results <path>"). A row without "settings" (written
/// before settings were) reads with none; a setting's value reads as the type JSON gives it (64 an integer, 0.001 and
/// 1.0 a float; null, a setting that was not finite, NaN). The derived "mean", "std",
/// "mean_attention_distance", "mean_distance_overall" and "entropy_overall" are not read; a null inside
/// "mean_distance" or "entropy" reads as NaN, and so does a null inside a "depth_accuracy" cell. Throws rpb::Error
/// naming the source and the key for a missing key (rpb-results-6: each row's "bytes" .. "learned" too, null or
/// not), a value of another type or another format, arrays whose sizes disagree with "seeds" and "multipliers" (a
/// row's "runs" included) and a "depth_accuracy" cell of other than kDepthBins values. A run's "seed" must be the
/// sweep's seed at its place.
SweepResults sweep_results_from_json(const Json& json, const std::string& source);

/// Reads results.json at `path` (at most kMaxSweepResultsBytes, train/io/input_file.h). Throws rpb::Error naming
/// the file (and the key).
SweepResults read_sweep_results(const std::string& path);

}  // namespace rpb
