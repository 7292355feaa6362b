// rpb/train/io/status_line.cpp: see status_line.h.
#include "train/io/status_line.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace rpb {

namespace {

// On a terminal: the first line after a second (quick work shows none), then at most every quarter second, which is
// also how often the ticker looks.
constexpr std::chrono::seconds kFirstDraw{1};
constexpr std::chrono::milliseconds kRedraw{250};

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e12) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

StatusLine::StatusLine(spdlog::logger& log, std::function<std::string()> line, double log_every)
    : log_(log),
      line_(std::move(line)),
      tty_(isatty(STDERR_FILENO)),
      log_every_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(log_every))) {
  // The ticker takes no signal: SIGINT and SIGTERM reach the working thread, as they did without it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  ticker_ = std::thread([this] { tick(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

StatusLine::~StatusLine() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  ticker_.join();
  if (!drawn_.empty()) std::fprintf(stderr, "\r%*s\r", static_cast<int>(drawn_.size()), "");
}

void StatusLine::tick() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kRedraw, [this] { return stop_; })) report(Clock::now());
}

void StatusLine::poke() {
  const std::lock_guard lock(mutex_);
  report(Clock::now());
}

void StatusLine::report(Clock::time_point now) {
  const bool draw = tty_ && now - t0_ >= kFirstDraw && now - last_draw_ >= kRedraw;
  const bool log = now - last_log_ >= log_every_;
  if (!draw && !log) return;
  const std::string line = line_();
  if (line.empty()) return;
  if (draw) {
    const std::string text = "  " + line;
    if (text != drawn_) {  // a shorter line blanks what is left of the longer one
      const int pad = static_cast<int>(drawn_.size() > text.size() ? drawn_.size() - text.size() : 0);
      std::fprintf(stderr, "\r%s%*s", text.c_str(), pad, "");
      std::fflush(stderr);
      drawn_ = text;
    }
    last_draw_ = now;
  }
  if (log) {
    log_.log(progress_level(tty_), "{}", line);
    last_log_ = now;
  }
}

}  // namespace rpb
