// rpb/train/progress.h: the progress of one training run (its log lines and the terminal line), and where the
// run sits in a sweep.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/checkpoint/metrics_row.h"
#include "train/io/status_line.h"  // progress_level, format_duration

namespace rpb {

/// What a caller tells Run::train and Run::evaluate about the run's place (Run::set_context): a sweep's position
/// and time, shown in the progress lines, and the command that resumes it, shown when a signal interrupts it.
struct ProgressContext {
  std::string prefix;          // before every line the run logs, e.g. "[3/72] markov / t5 / seed 0:" (a sweep's
                               // count, task, method and seed); empty: none
  int64_t runs_done = 0;       // a sweep's runs finished before this one
  int64_t runs_total = 0;      // a sweep's runs in all; 0: not a sweep (no sweep ETA)
  double elapsed_s = 0;        // the sweep's time before this run
  std::string resume_command;  // empty: "build/rpb train <config file> --resume"
  double eval_log_every_s = 10;  // seconds between Run::evaluate's log lines (train/eval_progress.h); 0: every batch
};


/// The progress of one Run::train from step `start` to `steps`: tokens/s over each logging window, the run's
/// elapsed time (`elapsed_before`: its earlier sessions', from the metrics it resumed with) and its ETA, a
/// sweep's ETA, written as a log line or, on a terminal, as one line rewritten in place.
class Progress {
 public:
  Progress(spdlog::logger& log, int64_t start, int64_t steps, double elapsed_before, ProgressContext context);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add_tokens(int64_t n) { window_tokens_ += n; }
  /// Leaves `seconds` (a validation) out of the tokens/s window.
  void exclude(double seconds);
  /// Logs step `done` with `loss` (the interval's mean) and returns the metrics row; the terminal line shows the
  /// first of `valid` (a validation at this step: (length, mean NLL)) too.
  MetricsRow log(int64_t done, double loss, double lr, double norm,
                 const std::vector<std::pair<int64_t, double>>& valid = {});
  /// Between logged steps: a line when the last one is more than kQuiet old, so that slow steps show progress.
  void tick(int64_t done);
  /// The run's training time so far, over all its sessions.
  double elapsed() const;
  /// The level of the lines the terminal line stands for (progress_level).
  spdlog::level::level_enum level() const { return progress_level(tty_); }

 private:
  std::string timing(int64_t done, double secs) const;

  spdlog::logger& log_;
  int64_t start_, steps_;
  double elapsed_before_;
  ProgressContext context_;
  bool tty_;
  static constexpr std::chrono::seconds kQuiet{10};
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0_ = Clock::now(), window_start_ = t0_, last_line_ = t0_;
  int64_t window_tokens_ = 0;
};

}  // namespace rpb
