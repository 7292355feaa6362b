// rpb/train/progress.cpp: see progress.h.
#include "train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace rpb {

Progress::Progress(spdlog::logger& log, int64_t start, int64_t steps, double elapsed_before, ProgressContext context)
    : log_(log),
      start_(start),
      steps_(steps),
      elapsed_before_(elapsed_before),
      context_(std::move(context)),
      tty_(isatty(STDERR_FILENO)) {}

Progress::~Progress() {
  if (tty_) std::fprintf(stderr, "\n");
}

void Progress::exclude(double seconds) {
  window_start_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double Progress::elapsed() const {
  return elapsed_before_ + std::chrono::duration<double>(Clock::now() - t0_).count();
}

// "elapsed 0:01:02 ETA 0:05:00" and, in a sweep, "sweep elapsed 1:00:00 ETA 2:00:00"; `secs`: this session's time.
std::string Progress::timing(int64_t done, double secs) const {
  const double run_fraction = static_cast<double>(done - start_) / static_cast<double>(steps_ - start_);
  const double eta = secs / static_cast<double>(done - start_) * static_cast<double>(steps_ - done);
  std::string s = "elapsed " + format_duration(elapsed_before_ + secs) + " ETA " + format_duration(eta);
  if (context_.runs_total > 0) {
    // The sweep's runs so far, this one counted by its fraction done.
    const double sweep_done = static_cast<double>(context_.runs_done) + run_fraction;
    const double sweep_secs = context_.elapsed_s + secs;
    s += ", sweep elapsed " + format_duration(sweep_secs) + " ETA " +
         format_duration(sweep_secs / sweep_done * (static_cast<double>(context_.runs_total) - sweep_done));
  }
  return s;
}

MetricsRow Progress::log(int64_t done, double loss, double lr, double norm,
                         const std::vector<std::pair<int64_t, double>>& valid) {
  const auto now = Clock::now();
  const double window = std::chrono::duration<double>(now - window_start_).count();
  const double tps = window > 0 ? static_cast<double>(window_tokens_) / window : 0.0;
  const double secs = std::chrono::duration<double>(now - t0_).count();
  const std::string prefix = context_.prefix.empty() ? "" : context_.prefix + " ";
  const std::string time = timing(done, secs);
  if (tty_) {
    const std::string v = valid.empty() ? "" : fmt::format("  valid {:.4f}", valid.front().second);
    std::fprintf(stderr, "\r  %sstep %lld/%lld  loss %.4f%s  lr %.2e  %.0f tok/s  %s   ", prefix.c_str(),
                 static_cast<long long>(done), static_cast<long long>(steps_), loss, v.c_str(), lr, tps, time.c_str());
  }
  log_.log(level(),
           "{}step {}/{} loss {:.4f} lr {:.3e} grad_norm {:.3f} {:.0f} tok/s {}", prefix, done, steps_, loss, lr, norm,
           tps, time);
  window_start_ = now;
  last_line_ = now;
  window_tokens_ = 0;
  return {done, loss, lr, norm, tps, elapsed_before_ + secs};
}

void Progress::tick(int64_t done) {
  const auto now = Clock::now();
  if (now - last_line_ < kQuiet) return;
  last_line_ = now;
  const double secs = std::chrono::duration<double>(now - t0_).count();
  log_.info("{}step {}/{}: {:.1f} s per step, {} (next logged step: run.log_every)",
            context_.prefix.empty() ? "" : context_.prefix + " ", done, steps_,
            secs / static_cast<double>(done - start_), timing(done, secs));
}

}  // namespace rpb
