// rpb/optim/schedule.h: learning-rate schedules (constant, cosine), with linear warm-up.
#pragma once

#include <cstdint>
#include <string>

#include "core/enum_names.h"

namespace rpb::optim {

/// The shape of the rate after warm-up (optim.schedule).
enum class ScheduleKind {
  constant,  // lr
  cosine     // from lr down to min_lr_ratio x lr at total_steps
};

/// optim.schedule's names: "constant", "cosine".
inline constexpr EnumName<ScheduleKind> kScheduleKindNames[] = {{ScheduleKind::constant, "constant"},
                                                                {ScheduleKind::cosine, "cosine"}};

/// The keys mirror the config's: errors name them.
struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::constant;
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
