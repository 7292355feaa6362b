// rpb/train/run/eval_result.h: what an evaluation measures at one size (perplexity, attention diagnostics); the
// workload produces them (train/workload.h), eval records and sweeps store them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nn/attention_stats.h"

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
  /// exp(nll); nullopt where nll is.
  std::optional<double> perplexity() const;
  /// nll * tokens / (bytes * ln 2): bits per byte of text, comparable across tokenizers; nullopt where nll is or
  /// bytes is 0.
  std::optional<double> bits_per_byte() const;
};

/// The diagnostics an AttentionStatsRecorder holds, [layer][head].
AttentionDiagnostics attention_diagnostics(const std::vector<nn::AttentionStats>& layers);

}  // namespace rpb
