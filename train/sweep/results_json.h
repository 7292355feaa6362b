// rpb/train/sweep/results_json.h: the sweep's results.json, written and read back through one struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/io/json_text.h"
#include "train/run/eval_result.h"
#include "train/sweep/sweep.h"

namespace rpb {

/// The format results.json's "format" key names. A results.json without one is rpb's earlier format (numbers with
/// 10 significant digits, the same keys), which read_sweep_results reads too.
inline constexpr const char* kSweepResultsFormat = "rpb-results-2";
/// The largest results.json read_sweep_results reads.
inline constexpr std::size_t kMaxSweepResultsBytes = std::size_t(256) << 20;

/// One row of results.json: a method on a task, over the sweep's seeds and lengths.
struct SweepResultsRow {
  std::string task;                                         // "markov"
  std::string method;                                       // SweepMethod::name() ("t5@buckets16")
  std::string label;                                        // SweepMethod::label(), the table's Method column
  int64_t position_params = 0;
  std::optional<double> optimal_perplexity;                 // exp(entropy rate) where the task knows it
  std::vector<std::vector<std::optional<double>>> perplexity;  // [seed][length]; nullopt: cannot run there
  std::vector<std::vector<std::optional<double>>> nll;         // [seed][length]: mean NLL in nats
  std::vector<std::vector<int64_t>> tokens;                    // [seed][length]: target tokens (0 where nll is nullopt)
  std::vector<std::optional<double>> mean, std;             // [length]: perplexity mean and std over the seeds
  std::vector<std::vector<AttentionDiagnostics>> attention;  // [seed][length]: empty where not measured
  std::vector<std::optional<double>> distance_mean, distance_std;  // [length]: mean attention distance over seeds
};

/// What results.json holds.
struct SweepResults {
  std::string format = kSweepResultsFormat;  // as read ("" for the earlier, unversioned format)
  std::string name;                          // sweep.name
  int64_t train_length = 0;
  std::vector<int64_t> multipliers;
  std::vector<uint64_t> seeds;
  std::vector<SweepResultsRow> rows;
};

/// The results of sweep `r` as results.json holds them (the means and stds over seeds computed, mean_std).
SweepResults sweep_results(const SweepResult& r);

/// results.json's object:
///   {"format": "rpb-results-2", "name": ..., "train_length": 64, "multipliers": [1, 2, 4], "seeds": [0, 1],
///    "rows": [{"task": ..., "method": ..., "label": ..., "position_params": 32, "optimal_perplexity": x | null,
///              "perplexity": [[per length] per seed], "nll": [[...]], "tokens": [[n | null]],
///              "mean": [per length], "std": [...],
///              "attention": [[null | {"mean_distance": [[per head] per layer], "entropy": [[...]],
///                                     "mean_distance_overall": x, "entropy_overall": y}]],
///              "mean_attention_distance": {"mean": [per length], "std": [...]}}, ...]}
/// Values that are not finite or not defined are null; tokens are null where nll is.
Json sweep_results_object(const SweepResults& r);

/// The results `json` holds; `source` names it in errors ("sweep results <path>"). The derived
/// "mean_distance_overall" and "entropy_overall" are not read; a null inside "mean_distance" or "entropy" reads
/// as NaN. Throws rpb::Error naming the source and the key for a missing key, a value of another type or
/// another format, and arrays whose sizes disagree with "seeds" and "multipliers".
SweepResults sweep_results_from_json(const Json& json, const std::string& source);

/// Reads results.json at `path` (at most kMaxSweepResultsBytes, train/io/input_file.h). Throws rpb::Error naming
/// the file (and the key).
SweepResults read_sweep_results(const std::string& path);

}  // namespace rpb
