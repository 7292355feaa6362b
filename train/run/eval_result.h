// rpb/train/run/eval_result.h: what an evaluation measures at one size (perplexity, attention diagnostics); the
// workload produces them (train/workload.h), eval records and sweeps store them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nn/attention_stats.h"
#include "train/data/passkey.h"
#include "train/data/position_loss.h"

namespace rpb {

/// Attention diagnostics at one evaluation size (nn/attention_stats.h), measured on the evaluation's sample: the
/// first held-out segments (grids) holding as many target tokens (cells) as one segment (grid) of the longest
/// size, so every size sees the same tokens where the task allows it. Empty when not measured
/// (run.eval_diagnostics off, a size the model cannot run at, or window attention, which records none).
struct AttentionDiagnostics {
  std::vector<std::vector<double>> mean_distance;  // [layer][head]: positions (grids: cells, Euclidean)
  std::vector<std::vector<double>> entropy;        // [layer][head]: nats
  bool empty() const { return mean_distance.empty(); }
  /// The mean over layers and heads; nullopt when empty.
  std::optional<double> mean_distance_overall() const;
  std::optional<double> entropy_overall() const;
};

/// Perplexity at one evaluation size (a length, or a grid side).
struct LengthResult {
  int64_t length = 0;
  int64_t multiplier = 0;
  std::optional<double> nll;  // mean NLL in nats; nullopt where the model cannot run (learned positions past its table)
  int64_t tokens = 0;         // target tokens (grids: cells) the mean is over; 0 where nll is nullopt
  AttentionDiagnostics attention;  // test split with run.eval_diagnostics; else empty
  /// The bytes of text the scored tokens stand for (a text task's: data::Tokenizer::token_bytes); 0 for the tasks
  /// without text bytes. The same at every length: every length scores the same tokens.
  int64_t bytes = 0;
  /// Passkey retrieval (a task whose samples hold a key to retrieve, task.kind = "passkey"): the share of held-out
  /// samples whose answer greedy decoding reproduces exactly, over every depth; nullopt for the other tasks (and
  /// where nll is nullopt). nll is then the answer tokens' mean NLL.
  std::optional<double> accuracy = std::nullopt;
  /// Algorithmic tasks (train/data/algorithmic.h): the share of scored targets whose largest logit is the target,
  /// pooled over the held-out samples (Delétang et al.'s accuracy); accuracy is then the share of samples whose
  /// scored targets are all right (exact match), and nll the scored targets' mean NLL. nullopt for the other tasks.
  std::optional<double> token_accuracy = std::nullopt;
  /// Algorithmic tasks: the held-out samples scored (task.eval_samples); tokens counts their scored targets.
  int64_t samples = 0;
  /// Passkey: the accuracy per depth of the key, kDepthBins bins of the context (bin 0: the key in its first tenth);
  /// empty for the other tasks.
  std::vector<double> depth_accuracy = {};
  /// Passkey: the held-out samples in each depth bin (the same in every bin); 0 for the other tasks.
  int64_t samples_per_depth = 0;
  /// Per-token loss by position (train/data/position_loss.h): the scored targets' NLL at each position of the
  /// sequences scored, [position], measured where the attention diagnostics are (the test split with
  /// run.eval_diagnostics) for the language-model and algorithmic tasks; empty otherwise (passkey scores the answer
  /// alone, grids have no one position).
  data::PositionLoss position_loss = {};
  /// exp(nll); nullopt where nll is.
  std::optional<double> perplexity() const;
  /// nll * tokens / (bytes * ln 2): bits per byte of text, comparable across tokenizers; nullopt where nll is or
  /// bytes is 0.
  std::optional<double> bits_per_byte() const;
};

/// An algorithmic task's score (Delétang et al.'s range evaluation): the mean of `values` [length] (per-token
/// accuracies) over the lengths past the train length, multipliers[j] > 1; nullopt where none of them has a value.
std::optional<double> past_training_mean(const std::vector<std::optional<double>>& values,
                                         const std::vector<int64_t>& multipliers);

/// Passkey: the depth bins of LengthResult::depth_accuracy (tenths of the context; train/data/passkey.h).
inline constexpr int64_t kDepthBins = data::kPasskeyDepthBins;
/// Passkey: the accuracy at the train length from which a run counts as having learned the task; a run below it is
/// reported as not learning the task, never as failing to extrapolate.
inline constexpr double kLearnedAccuracy = 0.95;

/// The diagnostics an AttentionStatsRecorder holds, [layer][head].
AttentionDiagnostics attention_diagnostics(const std::vector<nn::AttentionStats>& layers);

}  // namespace rpb
