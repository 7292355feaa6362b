// rpb/train/checkpoint/metrics_row.h: one row of a run's training metrics, as train.log and metrics.csv show it and
// checkpoints keep it (/metrics).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace rpb {

/// One row of the training log kept in a checkpoint (and in the run folder's metrics.csv).
struct MetricsRow {
  int64_t step;
  double loss;            // mean training loss of the steps since the previous row (non-finite losses left out)
  double lr;
  double grad_norm;
  double tokens_per_sec;
  double elapsed_s = 0;   // training time of the run up to this row, over all its resumes
  /// A validation at this step (run.eval_every): (length, mean NLL on the valid split), lengths the model cannot
  /// run at left out. Empty: no validation at this step. A NaN loss is stored as none (NaN marks "no value").
  std::vector<std::pair<int64_t, double>> valid_loss = {};
  /// A passkey validation's exact-match accuracy (length, share of the valid samples), as valid_loss; empty for the
  /// tasks without an accuracy.
  std::vector<std::pair<int64_t, double>> valid_accuracy = {};
};

}  // namespace rpb
