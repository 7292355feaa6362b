// rpb/train/sweep/sweep.h: the perplexity-vs-length sweep (`rpb extrapolate`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train/config/config.h"
#include "train/run/eval_result.h"

namespace rpb {

/// Where one seed's run of a sweep row lives and what it evaluated: a number of results.json or results.csv traces
/// back to its checkpoint through these.
struct SweepRunRecord {
  std::string folder;             // the run folder, as the sweep named it: <out_dir>/<name>/<task>/<method folder>/seed<k>
  std::string config_digest;      // of the run's config identity (train/config/run_identity.h config_digest)
  std::string checkpoint;         // the checkpoint evaluated, a file name in `folder` ("step_00000600.h5")
  std::string checkpoint_sha256;  // of its bytes as loaded or saved; "" when not known (a run stopped on a NaN)
};

/// [seed][length] tables (MethodResult's and SweepResultsRow's, train/sweep/results_json.h).
template <typename T>
using SeedTable = std::vector<std::vector<T>>;

/// t[s][j], or `none` where t has no such cell (a result built without the table).
template <typename T>
const T& cell_or(const SeedTable<T>& t, std::size_t s, std::size_t j, const T& none) {
  return s < t.size() && j < t[s].size() ? t[s][j] : none;
}
/// Whether a cell of `bytes` is > 0, and whether a cell of `values` is defined.
bool any_positive(const SeedTable<int64_t>& bytes);
bool any_defined(const SeedTable<std::optional<double>>& values);
/// Seed s's bits per byte at length j of the tables (LengthResult::bits_per_byte): nullopt where nll is or bytes is 0.
std::optional<double> bits_per_byte_at(const SeedTable<std::optional<double>>& nll, const SeedTable<int64_t>& tokens,
                                       const SeedTable<int64_t>& bytes, std::size_t s, std::size_t j);

/// The accuracy at the train length from which a seed counts as having learned its task: `learned_threshold` for
/// passkey's accuracy; 0 where the row has a per-token accuracy (an algorithmic task), whose exact match counts every
/// seed, as Delétang et al. report every run.
inline double accuracy_threshold(bool per_token, double learned_threshold) {
  return per_token ? 0.0 : learned_threshold;
}

/// One method (position scheme) on one task, over the sweep's seeds.
struct MethodResult {
  std::string task;
  SweepMethod method;
  std::string label;  // its name in the results (method_label, train/sweep/labels.h); "": method.label()
  /// `label`, or method.label() where it is empty (a result built without it).
  std::string shown_label() const { return label.empty() ? method.label() : label; }
  int64_t position_params = 0;
  int64_t eval_stride = 0;  // the protocol of its numbers: 0 nonoverlapping, S sliding windows (run.eval_stride)
  std::vector<int64_t> lengths;                            // evaluated lengths (multiples of the train length)
  std::vector<std::vector<std::optional<double>>> ppl;     // [seed][length]; nullopt: cannot run at that length
  std::vector<std::vector<std::optional<double>>> nll;     // [seed][length]: mean NLL in nats, as ppl
  std::vector<std::vector<int64_t>> tokens;                // [seed][length]: target tokens scored (0 where nullopt)
  std::vector<std::vector<AttentionDiagnostics>> attention;  // [seed][length]: empty where not measured
  std::optional<double> optimal_ppl;                       // exp(entropy rate) for synthetic tasks
  std::vector<SweepRunRecord> runs;                        // [seed]: the run each seed's numbers come from
  /// [seed][length]: the text bytes the scored tokens stand for (LengthResult::bytes); 0 for a task without text
  /// bytes and where nll is nullopt.
  std::vector<std::vector<int64_t>> bytes;
  /// [seed][length]: passkey retrieval's exact-match share (LengthResult::accuracy); nullopt for the other tasks.
  std::vector<std::vector<std::optional<double>>> accuracy;
  /// [seed][length]: passkey's accuracy per depth of the key, kDepthBins values; empty for the other tasks.
  std::vector<std::vector<std::vector<double>>> depth_accuracy;
  /// [seed]: for a passkey row with evaluation settings ("rope@rope_scaling=yarn"), the accuracy at the train length
  /// of the run it evaluates, scored as trained (without them): whether the seed learned the task (learned_seeds).
  /// Empty for every other row, whose own first length says it.
  std::vector<std::optional<double>> trained_accuracy;
  double learned_threshold = kLearnedAccuracy;  // [sweep] learned_threshold: the accuracy that counts as learning
  /// [seed][length]: passkey's held-out samples per depth bin; 0 for the other tasks.
  std::vector<std::vector<int64_t>> samples_per_depth;
  /// [seed][length]: an algorithmic task's per-token accuracy (LengthResult::token_accuracy; `accuracy` is then its
  /// exact match, counted over every seed: learned_threshold 0); nullopt for the other tasks.
  std::vector<std::vector<std::optional<double>>> token_accuracy;
  /// [seed][length]: the per-token loss by position (LengthResult::position_loss); empty where not measured.
  std::vector<std::vector<data::PositionLoss>> position_loss;
  /// The per-position loss at length j pooled over the seeds (their sums and targets added); empty where no seed
  /// measured it.
  data::PositionLoss pooled_position_loss(std::size_t j) const;
  /// The perplexities at length j over the seeds.
  std::vector<std::optional<double>> column(std::size_t j) const;
  /// Seed s's bits per byte at length j (LengthResult::bits_per_byte); nullopt where nll is or bytes is 0.
  std::optional<double> bits_per_byte(std::size_t s, std::size_t j) const;
  /// The bits per byte at length j over the seeds.
  std::vector<std::optional<double>> bits_per_byte_column(std::size_t j) const;
  /// The accuracies at length j over the seeds (every seed's, learned or not).
  std::vector<std::optional<double>> accuracy_column(std::size_t j) const;
  /// The per-token accuracies at length j over the seeds (an algorithmic task's; empty for the others).
  std::vector<std::optional<double>> token_accuracy_column(std::size_t j) const;
  /// The threshold learned_seeds compares the first length's accuracy to (accuracy_threshold).
  double threshold() const { return accuracy_threshold(has_token_accuracy(), learned_threshold); }
  /// Seed s's value at length j of bytes ... samples_per_depth; 0, nullopt or empty where none was recorded (a
  /// result built without them).
  int64_t bytes_at(std::size_t s, std::size_t j) const;
  std::optional<double> accuracy_at(std::size_t s, std::size_t j) const;
  std::optional<double> token_accuracy_at(std::size_t s, std::size_t j) const;
  const std::vector<double>& depth_accuracy_at(std::size_t s, std::size_t j) const;
  int64_t samples_per_depth_at(std::size_t s, std::size_t j) const;
  /// Whether a seed and length has text bytes (bits per byte), and whether one has an accuracy (a passkey task).
  bool has_bytes() const;
  bool has_accuracy() const;
  /// Whether a seed and length has a per-token accuracy (an algorithmic task).
  bool has_token_accuracy() const;
  /// The mean attention distance (over layers and heads) at length j over the seeds; nullopt where not measured.
  std::vector<std::optional<double>> distance_column(std::size_t j) const;
  /// The diagnostics of seed s at length j (empty where none were recorded).
  const AttentionDiagnostics& attention_at(std::size_t s, std::size_t j) const;
};

struct SweepResult {
  std::string name;
  int64_t train_length = 0;
  std::vector<int64_t> multipliers;
  std::vector<uint64_t> seeds;
  std::vector<MethodResult> rows;
  std::map<std::string, std::string> task_labels;  // task -> its name in the results (task_label, labels.h)
  double learned_threshold = kLearnedAccuracy;     // [sweep] learned_threshold
};

/// Trains (or reuses) every method x task x seed run of the sweep, evaluates each at every
/// multiplier of the train length, and returns the table. Runs live in
/// <out_dir>/<name>/<task>/<method>/seed<k>; finished runs are reused, interrupted ones resumed, but only when
/// their stored config has the run's identity (train/config/run_identity.h; a sweep never extends a run): else rpb::Error
/// lists the differing keys, unless `overwrite` moves the run folder aside and trains the run afresh.
/// `resume_command` is what a run interrupted by a signal tells to run (Run::set_context).
///
/// A fine-tune method (run.init_from = "<method>", a method of sweep.methods or a bare scheme) continues the run of
/// that method with the same task and seed: the parent is trained (or reused) first, and the fine-tune's run.init_from
/// becomes the parent's final checkpoint (its SHA-256 then in the fine-tune's identity, Run). A name that is neither,
/// or a parent that is itself a fine-tune, is refused before anything trains.
///
/// Under MPI with N > 1 ranks (train/dist/distributed.h), the ranks first train the runs, each whole on one rank and
/// handed out as ranks free up (train/sweep/work_queue.h), the fine-tunes aside; then rank 0 alone trains the
/// fine-tunes (after their parents) and evaluates every run as one process does and returns the table, which is
/// bit-identical to a one-process sweep's. The other ranks return an empty result.
SweepResult run_sweep(const RunConfig& config, bool overwrite = false, const std::string& resume_command = {});

/// mean and sample standard deviation of the defined values (nullopt when none is defined).
std::optional<std::pair<double, double>> mean_std(const std::vector<std::optional<double>>& v);

/// Whether each seed learned a passkey task, from `accuracy` [seed][length]: its accuracy at the first length (the
/// train length, multiplier index 0) is at least `threshold` ([sweep] learned_threshold; kLearnedAccuracy,
/// train/run/eval_result.h, by default). `trained` [seed], when not empty, is what counts instead: the accuracy at the
/// train length of the model as it was trained (a row with evaluation settings, such as a RoPE scaling, scores its own
/// first length with them; whether the task was learned is its trained run's question, MethodResult::trained_accuracy).
std::vector<bool> learned_seeds(const std::vector<std::vector<std::optional<double>>>& accuracy,
                                const std::vector<std::optional<double>>& trained = {},
                                double threshold = kLearnedAccuracy);

/// [length]: the mean and std (mean_std) of `accuracy` [seed][length] as the sweep reports it: at the first length
/// over every seed, past it over the seeds that learned the task (learned_seeds) only, so that a seed that never
/// learned it does not read as failing to extrapolate; nullopt where no such seed has a value (past the first length
/// when no seed learned the task).
std::vector<std::optional<std::pair<double, double>>> accuracy_stats(
    const std::vector<std::vector<std::optional<double>>>& accuracy,
    const std::vector<std::optional<double>>& trained = {}, double threshold = kLearnedAccuracy);

}  // namespace rpb
