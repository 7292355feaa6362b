// rpb/train/io/status_line.h: one line of progress for work that may take minutes (an evaluation, tokenizing a
// corpus): rewritten in place on a terminal, logged every few seconds otherwise.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace rpb {

/// The level of the progress lines a terminal line stands for (`tty`: stderr is a terminal): debug (a run's
/// train.log only) on a terminal, else info. Training's, an evaluation's and tokenizing's alike.
inline spdlog::level::level_enum progress_level(bool tty) { return tty ? spdlog::level::debug : spdlog::level::info; }

/// Seconds as h:mm:ss ("0:04:05", "27:00:00"); "?" when not finite or negative.
std::string format_duration(double seconds);

/// Shows `line()` while the object lives: on a terminal (stderr), drawn from the first second on, redrawn at most
/// every quarter second and cleared at the end; every `log_every` seconds also logged to `log`, at progress_level. A
/// thread of its own draws it, so that one step of minutes still shows its time; it blocks every signal (they reach
/// the working thread, as without it), writes nothing to stdout and touches nothing of the work. `line` is called from
/// that thread and from poke()'s caller, so it must read the work's state safely (atomics, or a lock of its own);
/// it returns "" while there is nothing to show. Work shorter than a second draws nothing, and shorter than
/// `log_every` logs nothing.
class StatusLine {
 public:
  StatusLine(spdlog::logger& log, std::function<std::string()> line, double log_every);
  /// Stops the thread and clears the terminal line.
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  /// Draws and logs now what is due (the thread does so four times a second anyway).
  void poke();
  /// Whether stderr is a terminal.
  bool tty() const { return tty_; }

 private:
  using Clock = std::chrono::steady_clock;
  void report(Clock::time_point now);  // with mutex_ held
  void tick();

  spdlog::logger& log_;
  const std::function<std::string()> line_;
  const bool tty_;
  const Clock::duration log_every_;
  std::mutex mutex_;  // guards what follows, which the ticker and poke() share
  bool stop_ = false;
  Clock::time_point t0_ = Clock::now(), last_log_ = t0_, last_draw_ = t0_;
  std::string drawn_;  // the terminal line drawn last ("": none)
  std::condition_variable wake_;
  std::thread ticker_;  // last: started once everything above is set
};

}  // namespace rpb
