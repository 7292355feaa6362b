// rpb/train/run/metrics_csv.h: a run folder's metrics.csv, one line per logged step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/checkpoint/checkpoint.h"
#include "train/io/no_follow.h"

namespace rpb {

/// The columns of metrics.csv for validation lengths `valid_lengths` and accuracy lengths `accuracy_lengths` (each
/// sorted, distinct; the accuracy only for passkey retrieval):
/// step,train_loss,valid_loss@<length>...,valid_accuracy@<length>...,lr,grad_norm,tokens,tokens_per_sec,elapsed_s;
/// `tokens` is the training tokens seen up to the step (step x the tokens of one batch: for a grid task, the cells),
/// for curves against tokens.
std::string metrics_csv_header(const std::vector<int64_t>& valid_lengths,
                               const std::vector<int64_t>& accuracy_lengths = {});

/// One row under that header, with a newline. Numbers are written in the shortest form that reads back exactly;
/// a cell is empty where the row has no validation at that length (or its loss is NaN). `batch_tokens` is the tokens
/// one step trains on (the whole batch, over every rank).
std::string metrics_csv_line(const MetricsRow& row, const std::vector<int64_t>& valid_lengths, int64_t batch_tokens,
                             const std::vector<int64_t>& accuracy_lengths = {});

/// The run folder's metrics.csv, kept beside the checkpoints' /metrics: written by every run, a line per logged
/// step. Each line goes out with one write(2) as it is appended (like train.log), so a process killed later
/// loses no line it wrote.
class MetricsCsv {
 public:
  /// Writes `path` anew, atomically (write_file_atomically): the header, then `rows`, the rows a resumed run's
  /// checkpoint holds (the lines logged after that checkpoint are logged again as its steps are replayed), so the
  /// file ends up as an uninterrupted run writes it. The validation columns are `valid_lengths` and those of
  /// `rows`, sorted, and the accuracy columns `accuracy_lengths` (a passkey run's) and those of `rows`;
  /// `batch_tokens` the tokens of one step (metrics_csv_line). Then opens it for appending (O_NOFOLLOW,
  /// train/io/no_follow.h). Errors name the file.
  MetricsCsv(const std::string& path, const std::vector<int64_t>& valid_lengths, const std::vector<MetricsRow>& rows,
             int64_t batch_tokens, const std::vector<int64_t>& accuracy_lengths = {});
  /// Appends the line of `row`.
  void append(const MetricsRow& row);
  const std::vector<int64_t>& valid_lengths() const { return lengths_; }

 private:
  std::string path_;
  std::vector<int64_t> lengths_, accuracy_lengths_;
  int64_t batch_tokens_;
  FileDescriptor fd_;
};

}  // namespace rpb
