// rpb/optim/schedule.h: learning-rate schedules (constant, cosine), with linear warm-up.
#pragma once

#include <cstdint>
#include <string>

namespace rpb::optim {

/// The keys mirror the config's: errors name them.
struct ScheduleOptions {
  /// "constant" or "cosine".
  std::string kind = "constant";
  /// The peak learning rate (> 0).
  double lr = 1e-3;
  /// Linear warm-up: step s < warmup_steps uses lr * (s + 1) / warmup_steps (>= 0; 0: none).
  int64_t warmup_steps = 0;
  /// Cosine: the step at which the rate reaches its floor (> warmup_steps). Unused by constant.
  int64_t total_steps = 0;
  /// Cosine: the floor as a fraction of lr, in [0, 1].
  double min_lr_ratio = 0.1;
};

/// Throws rpb::Error naming the offending key and its value.
void check_schedule(const ScheduleOptions& options);

/// The learning rate of 0-based step `step`. After warm-up, constant gives lr; cosine gives
/// min + (lr - min) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2 with
/// min = min_lr_ratio * lr, held at min from total_steps on.
double learning_rate(const ScheduleOptions& options, int64_t step);

}  // namespace rpb::optim
