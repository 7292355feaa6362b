// rpb/train/sweep/results_json.h: the sweep's results.json, written and read back through one struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/io/json_text.h"
#include "train/io/provenance.h"
#include "train/run/eval_result.h"
#include "train/sweep/sweep.h"

namespace rpb {

/// The format results.json's "format" key names. read_sweep_results reads the earlier ones too: "rpb-results-4"
/// (rows without their "protocol" and "eval_stride": every row nonoverlapping), "rpb-results-3" (without their
/// "scheme" either), "rpb-results-2" (without "provenance" and the rows' "runs" either) and a
/// results.json without a format (numbers with 10 significant digits, the keys of rpb-results-2).
inline constexpr const char* kSweepResultsFormat = "rpb-results-5";
/// The largest results.json read_sweep_results reads.
inline constexpr std::size_t kMaxSweepResultsBytes = std::size_t(256) << 20;

/// One row of results.json: a method on a task, over the sweep's seeds and lengths.
struct SweepResultsRow {
  std::string task;                                         // "markov"
  std::string method;                                       // SweepMethod::name() ("t5@buckets16")
  std::string scheme;  // SweepMethod::scheme, the registered scheme ("t5"); "" when read from an earlier format
  std::string label;                                        // SweepMethod::label(), the table's Method column
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

  /// [length]: the mean and the std over the seeds (mean_std, train/sweep/sweep.h) of the perplexity, and of the
  /// mean attention distance (AttentionDiagnostics::mean_distance_overall); nullopt where no seed has a value.
  /// Derived from perplexity and attention: results.json's "mean", "std" and "mean_attention_distance".
  std::vector<std::optional<double>> perplexity_mean() const;
  std::vector<std::optional<double>> perplexity_std() const;
  std::vector<std::optional<double>> distance_mean() const;
  std::vector<std::optional<double>> distance_std() const;
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
};

/// The metrics results.json rows hold, in the order figures draw them: perplexity, mean_attention_distance,
/// attention_entropy.
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
  Provenance provenance;  // the rpb, command and date that wrote the file (train/io/provenance.h); empty when read
                          // from an earlier format
};

/// The results of sweep `r` as results.json holds them, with `provenance` (write_results: current_provenance()).
SweepResults sweep_results(const SweepResult& r, const Provenance& provenance = {});

/// results.json's object:
///   {"format": "rpb-results-5",
///    "provenance": {"rpb_version": "0.1.0", "commit": "<40 hex>[-dirty]" | "unknown", "command": "...",
///                   "date": "2025-01-31T12:34:56Z"} (train/io/provenance.h),
///    "name": ..., "train_length": 64, "multipliers": [1, 2, 4], "seeds": [0, 1],
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
///              "mean_attention_distance": {"mean": [per length], "std": [...]}}, ...]}
/// "mean", "std" and "mean_attention_distance" are SweepResultsRow's perplexity_mean ... distance_std. Values that
/// are not finite or not defined are null; tokens are null where nll is.
Json sweep_results_object(const SweepResults& r);

/// The results `json` holds; `source` names it in errors ("sweep results <path>"). A row without "settings" (written
/// before settings were) reads with none; a setting's value reads as the type JSON gives it (64 an integer, 0.001 and
/// 1.0 a float; null, a setting that was not finite, NaN). The derived "mean", "std",
/// "mean_attention_distance", "mean_distance_overall" and "entropy_overall" are not read; a null inside
/// "mean_distance" or "entropy" reads as NaN. Throws rpb::Error naming the source and the key for a missing key, a
/// value of another type or another format, and arrays whose sizes disagree with "seeds" and "multipliers" (a row's
/// "runs" included). A run's "seed" must be the sweep's seed at its place.
SweepResults sweep_results_from_json(const Json& json, const std::string& source);

/// Reads results.json at `path` (at most kMaxSweepResultsBytes, train/io/input_file.h). Throws rpb::Error naming
/// the file (and the key).
SweepResults read_sweep_results(const std::string& path);

}  // namespace rpb
