// rpb/train/eval_progress.h: the progress of an evaluation (`rpb eval`, the evaluation at the end of `rpb train`, a
// sweep's), shown as training's is (train/progress.h): a line rewritten in place on a terminal, log lines otherwise.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "train/io/status_line.h"

namespace rpb {

/// The progress of one evaluation over several sizes (lengths, or grid sides), each scoring its tokens (cells) in
/// batches: "eval length 65536 (1/3): 16384/65536 tokens (25%), elapsed 0:00:40, ETA of this length 0:02:00"
/// (the ETA once a batch of the size is scored, "?" before). On a terminal (stderr) that line is rewritten in place
/// from the evaluation's first second on, and cleared at the end; every `log_every` seconds it is also logged, at
/// info level off a terminal and at debug level on one (the terminal line stands for it). An evaluation shorter
/// than `log_every` logs nothing. A thread of its own shows it, so that a single forward of minutes (one segment
/// of 65536 tokens) still shows its time; it writes nothing to stdout and touches nothing evaluated.
class EvalProgress {
 public:
  /// `prefix` starts every line ("[3/72]" in a sweep; "" for none); `sizes` the evaluation's sizes in all;
  /// `grid`: sizes are grid sides of cells, not lengths of tokens; `log_every`: seconds between log lines (0: a
  /// line at every batch, for tests).
  EvalProgress(spdlog::logger& log, std::string prefix, int64_t sizes, bool grid, double log_every);
  /// Stops the thread and clears the terminal line.
  ~EvalProgress();
  EvalProgress(const EvalProgress&) = delete;
  EvalProgress& operator=(const EvalProgress&) = delete;

  /// Size `size` (a length or a grid side), the index-th of the sizes (from 0), begins: `units` tokens (cells) to
  /// score.
  void begin(int64_t index, int64_t size, int64_t units);
  /// `units` more tokens (cells) of the current size are scored.
  void advance(int64_t units);
  /// The current size is scored and its attention diagnostics measured (one more forward, run.eval_diagnostics):
  /// "eval length 4096 (1/3): 65536 tokens scored, measuring the attention (one more forward), elapsed 0:00:40".
  void measuring_attention();

 private:
  using Clock = std::chrono::steady_clock;
  /// The line to show now ("" before the first size begins).
  std::string line();

  const std::string prefix_;
  const int64_t sizes_;
  const bool grid_;
  std::mutex mutex_;  // guards what follows, which the evaluating thread and the status line's thread share
  bool begun_ = false, attention_ = false;
  int64_t index_ = 0, size_ = 0, units_ = 0, done_ = 0;
  Clock::time_point t0_ = Clock::now(), size_start_ = t0_;
  StatusLine status_;  // last: its thread reads every member above
};

}  // namespace rpb
