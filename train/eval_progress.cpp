// rpb/train/eval_progress.cpp: see eval_progress.h.
#include "train/eval_progress.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "train/progress.h"

namespace rpb {

namespace {

// On a terminal: the first line after a second (a quick evaluation shows none), then at most every quarter second,
// which is also how often the ticker looks.
constexpr std::chrono::seconds kFirstDraw{1};
constexpr std::chrono::milliseconds kRedraw{250};

}  // namespace

EvalProgress::EvalProgress(spdlog::logger& log, std::string prefix, int64_t sizes, bool grid, double log_every)
    : log_(log),
      prefix_(std::move(prefix)),
      sizes_(sizes),
      grid_(grid),
      tty_(isatty(STDERR_FILENO)),
      log_every_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(log_every))) {
  // The ticker takes no signal: SIGINT and SIGTERM reach the evaluating thread, as they did without it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  ticker_ = std::thread([this] { tick(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

EvalProgress::~EvalProgress() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  ticker_.join();
  if (!drawn_.empty()) std::fprintf(stderr, "\r%*s\r", static_cast<int>(drawn_.size()), "");
}

void EvalProgress::tick() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kRedraw, [this] { return stop_; })) report(Clock::now());
}

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
  const std::lock_guard lock(mutex_);
  done_ += units;
  report(Clock::now());
}

std::string EvalProgress::line(Clock::time_point now) const {
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

void EvalProgress::report(Clock::time_point now) {
  if (!begun_) return;
  if (tty_ && now - t0_ >= kFirstDraw && now - last_draw_ >= kRedraw) {
    const std::string text = "  " + line(now);
    if (text != drawn_) {  // a shorter line blanks what is left of the longer one
      const int pad = static_cast<int>(drawn_.size() > text.size() ? drawn_.size() - text.size() : 0);
      std::fprintf(stderr, "\r%s%*s", text.c_str(), pad, "");
      std::fflush(stderr);
      drawn_ = text;
    }
    last_draw_ = now;
  }
  if (now - last_log_ >= log_every_) {
    log_.log(progress_level(tty_), "{}", line(now));
    last_log_ = now;
  }
}

}  // namespace rpb
