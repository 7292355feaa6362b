// rpb/train/eval_progress.cpp: see eval_progress.h.
#include "train/eval_progress.h"

namespace rpb {

EvalProgress::EvalProgress(spdlog::logger& log, std::string prefix, int64_t sizes, bool grid, double log_every)
    : prefix_(std::move(prefix)), sizes_(sizes), grid_(grid), status_(log, [this] { return line(); }, log_every) {}

EvalProgress::~EvalProgress() = default;

void EvalProgress::begin(int64_t index, int64_t size, int64_t units) {
  const std::lock_guard lock(mutex_);
  begun_ = true;
  index_ = index;
  size_ = size;
  units_ = units;
  done_ = 0;
  attention_ = false;
  size_start_ = Clock::now();
}

void EvalProgress::measuring_attention() {
  const std::lock_guard lock(mutex_);
  attention_ = true;
}

void EvalProgress::advance(int64_t units) {
  {
    const std::lock_guard lock(mutex_);
    done_ += units;
  }
  status_.poke();
}

std::string EvalProgress::line() {
  const std::lock_guard lock(mutex_);
  if (!begun_) return "";
  const Clock::time_point now = Clock::now();
  const double secs = std::chrono::duration<double>(now - size_start_).count();
  const double eta = done_ > 0 ? secs / static_cast<double>(done_) * static_cast<double>(units_ - done_) : -1;
  const double percent = units_ > 0 ? 100.0 * static_cast<double>(done_) / static_cast<double>(units_) : 0.0;
  const char* size_name = grid_ ? "side" : "length";
  const std::string elapsed = format_duration(std::chrono::duration<double>(now - t0_).count());
  if (attention_)
    return fmt::format("{}eval {} {} ({}/{}): {} {} scored, measuring the attention (one more forward), elapsed {}",
                       prefix_.empty() ? "" : prefix_ + " ", size_name, size_, index_ + 1, sizes_, done_,
                       grid_ ? "cells" : "tokens", elapsed);
  return fmt::format("{}eval {} {} ({}/{}): {}/{} {} ({:.0f}%), elapsed {}, ETA of this {} {}",
                     prefix_.empty() ? "" : prefix_ + " ", size_name, size_, index_ + 1, sizes_, done_, units_,
                     grid_ ? "cells" : "tokens", percent, elapsed, size_name, format_duration(eta));
}

}  // namespace rpb
