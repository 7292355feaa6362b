#include "optim/schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace rpb::optim {

void check_schedule(const ScheduleOptions& o) {
  RPB_CHECK(std::isfinite(o.lr) && o.lr > 0, "schedule", "lr must be finite and > 0, got ", o.lr);
  RPB_CHECK(o.warmup_steps >= 0, "schedule", "warmup_steps must be >= 0, got ", o.warmup_steps);
  if (o.kind == ScheduleKind::cosine) {
    RPB_CHECK(o.total_steps > o.warmup_steps, "schedule", "total_steps (", o.total_steps,
              ") must exceed warmup_steps (", o.warmup_steps, ") for a cosine schedule");
    RPB_CHECK(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1, "schedule", "min_lr_ratio must lie in [0, 1], got ",
              o.min_lr_ratio);
  }
}

double learning_rate(const ScheduleOptions& o, int64_t step) {
  check_schedule(o);
  RPB_CHECK(step >= 0, "schedule", "step must be >= 0, got ", step);
  if (step < o.warmup_steps)
    return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  if (o.kind == ScheduleKind::constant) return o.lr;
  const double min_lr = o.min_lr_ratio * o.lr;
  if (step >= o.total_steps) return min_lr;
  const double progress =
      static_cast<double>(step - o.warmup_steps) / static_cast<double>(o.total_steps - o.warmup_steps);
  return min_lr + (o.lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace rpb::optim
