#include "train/trainer.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/atomic_file.h"
#include "train/latest.h"
#include "train/log_file_sink.h"
#include "train/memory.h"
#include "train/resume_point.h"
#include "train/run_folder.h"
#include "train/run_identity.h"
#include "train/run_lock.h"
#include "train/stored_model.h"
#include "train/version.h"

namespace fs = std::filesystem;

namespace rpb {

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimConfig& c, const nn::NamedTensors& params) {
  if (c.kind == "sgd") return std::make_unique<optim::SGD>(params, c.sgd);
  return std::make_unique<optim::Adam>(params, c.adam);
}

namespace {

// The run's logger: train.log (every level, each line written as it is logged, see LogFileSink) and the
// terminal (info and up). The file comes first, so a line shown on the terminal is already in train.log.
std::shared_ptr<spdlog::logger> run_logger(const std::string& dir) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto file = std::make_shared<LogFileSink>((fs::path(dir) / "train.log").string());
  console->set_level(spdlog::level::info);
  file->set_level(spdlog::level::debug);
  auto logger = std::make_shared<spdlog::logger>("run", spdlog::sinks_init_list{file, console});
  logger->set_level(spdlog::level::debug);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] [%l] %v");
  return logger;
}

// The first parameter (in order) holding a NaN or an Inf: the likely cause of a non-finite loss.
std::optional<std::string> first_non_finite_param(const std::vector<optim::NamedParam>& params) {
  for (const auto& p : params)
    for (double v : p.param.to_vector())
      if (!std::isfinite(v)) return p.name;
  return std::nullopt;
}

}  // namespace

Run::Run(const RunConfig& config) : config_(config), memory_(estimate_memory(config_, vocab_bound(config_))) {
  dir_ = config_.run_dir();
  check_memory(memory_, memory_budget(), "run " + config_.name);
  workload_ = make_workload(config_);
  optimizer_ = make_optimizer(config_.optim, workload_->model().named_parameters());
}

Run::~Run() = default;

Checkpoint Run::snapshot(int64_t step) const {
  Checkpoint c;
  c.step = step;
  c.config_text = config_.text;
  c.config_digest = config_digest(config_.text);
  c.library_version = version();
  c.params = workload_->model().named_parameters();
  c.buffers = workload_->model().named_buffers(true);
  c.optim = optimizer_->state();
  workload_->save_state(c);
  c.metrics = metrics_;
  return c;
}

void Run::restore(const Checkpoint& c, const std::string& file) {
  load_parameters(c, workload_->model(), file);
  optimizer_->load_state(c.optim);
  workload_->load_state(c, file);
  metrics_ = c.metrics;
}

void Run::save(int64_t step) {
  const std::string name = checkpoint_name(step);
  save_checkpoint((fs::path(dir_) / name).string(), snapshot(step));
  write_latest(dir_, name);
}

std::optional<std::pair<std::string, Checkpoint>> Run::latest() const {
  std::string file = read_latest(dir_);
  if (file.empty()) return std::nullopt;
  Checkpoint c = load_checkpoint(file);
  return std::make_pair(std::move(file), std::move(c));
}

int64_t Run::start_afresh(TrainSummary& summary) {
  summary.moved_aside = move_run_aside(dir_);
  fs::create_directories(dir_);
  return 0;
}

int64_t Run::start(bool resume, const std::string& resume_from, const StartOptions& options, TrainSummary& summary) {
  std::optional<ResumePoint> from;
  if (!resume_from.empty()) from = explicit_resume_point(dir_, resume_from);
  else if (resume) from = resume_point(dir_);
  else if (!options.overwrite) check_new_run_folder(dir_);
  else if (!run_folder_checkpoints(dir_).empty()) return start_afresh(summary);
  if (!from) return 0;
  const Checkpoint& c = from->checkpoint;
  const RunMatch match = match_run(c.config_text, from->file, config_, options.extend);
  if (!match.changes.empty()) {
    if (options.overwrite) return start_afresh(summary);
    throw Error(changed_config_message("train", dir_, from->file, match.changes));
  }
  config_ = match.config;  // with the schedule's horizon the run keeps
  if (match.extended) extend_note_ = extend_note(config_, match.stored_steps);
  check_checkpoint_step(c, config_, from->file);
  restore(c, from->file);
  if (!resume_from.empty()) write_latest(dir_, fs::path(from->file).filename().string());
  summary.resumed = true;
  summary.step = c.step;  // a run resumed at config.steps takes no step
  return c.step;
}

Run::StepResult Run::take_step(int64_t step, double lr) {
  StepResult r;
  optimizer_->zero_grad();
  Tensor loss = workload_->next_loss();
  r.loss = loss.item();
  if (!std::isfinite(r.loss)) {
    r.bad = "the loss";
    if (auto name = first_non_finite_param(optimizer_->params()))
      r.bad += " (parameter " + *name + " holds a NaN or an Inf)";
    tape().clear();
    return r;
  }
  backward(loss);
  if (gradient_hook_) gradient_hook_(step + 1, optimizer_->params());
  if (auto name = optim::first_non_finite_grad(optimizer_->params())) {
    r.bad = "the gradient of " + *name;
    return r;
  }
  r.grad_norm = optim::clip_grad_norm(optimizer_->params(),
                                      config_.optim.grad_clip > 0 ? config_.optim.grad_clip : INFINITY);
  optimizer_->step(lr);
  return r;
}

namespace {

// The progress of one train(): tokens/s over each logging window, an ETA, and the line on a terminal.
class Progress {
 public:
  Progress(spdlog::logger& log, int64_t start, int64_t steps)
      : log_(log), start_(start), steps_(steps), tty_(isatty(STDERR_FILENO)) {}
  ~Progress() {
    if (tty_) std::fprintf(stderr, "\n");
  }
  void add_tokens(int64_t n) { window_tokens_ += n; }
  /// Logs step `done` and returns the metrics row.
  MetricsRow log(int64_t done, double loss, double lr, double norm) {
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - window_start_).count();
    const double tps = secs > 0 ? static_cast<double>(window_tokens_) / secs : 0.0;
    const double elapsed = std::chrono::duration<double>(now - t0_).count();
    const double eta = elapsed / static_cast<double>(done - start_) * static_cast<double>(steps_ - done);
    if (tty_)
      std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  ETA %.0fs   ",
                   static_cast<long long>(done), static_cast<long long>(steps_), loss, lr, tps, eta);
    log_.log(tty_ ? spdlog::level::debug : spdlog::level::info,
             "step {}/{} loss {:.4f} lr {:.3e} grad_norm {:.3f} {:.0f} tok/s ETA {:.0f}s", done, steps_, loss, lr, norm,
             tps, eta);
    window_start_ = now;
    last_line_ = now;
    window_tokens_ = 0;
    return {done, loss, lr, norm, tps};
  }
  /// Between logged steps: a line when the last one is more than kQuiet old, so that slow steps show progress.
  void tick(int64_t done) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_line_ < kQuiet) return;
    last_line_ = now;
    const double per_step = std::chrono::duration<double>(now - t0_).count() / static_cast<double>(done - start_);
    log_.info("step {}/{}: {:.1f} s per step, ETA {:.0f}s (next logged step: run.log_every)", done, steps_, per_step,
              per_step * static_cast<double>(steps_ - done));
  }

 private:
  spdlog::logger& log_;
  int64_t start_, steps_;
  bool tty_;
  static constexpr std::chrono::seconds kQuiet{10};
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), window_start_ = t0_, last_line_ = t0_;
  int64_t window_tokens_ = 0;
};

}  // namespace

TrainSummary Run::train(bool resume, const std::string& resume_from, const StartOptions& options) {
  TrainSummary summary;
  fs::create_directories(dir_);
  auto lock = std::make_unique<RunLock>(dir_);  // held until the final save is done
  const std::vector<std::string> stale = remove_stale_temp_files(dir_);
  const int64_t start = this->start(resume, resume_from, options, summary);
  if (!summary.moved_aside.empty()) lock = std::make_unique<RunLock>(dir_);  // the new folder's
  auto log = run_logger(dir_);
  write_file_atomically((fs::path(dir_) / "config.toml").string(), digest_line(config_.text) + config_.text);
  if (!summary.moved_aside.empty()) log->info("--overwrite: moved the previous run folder aside to {}", summary.moved_aside);
  if (!extend_note_.empty()) log->info("{}", extend_note_);
  if (!stale.empty()) {
    std::string names;
    for (const std::string& n : stale) names += (names.empty() ? "" : ", ") + n;
    log->info("removed {} stale temp file(s) of interrupted saves: {}", stale.size(), names);
  }
  log->info("run {}: {} on {}, {} parameters, steps {}..{}", config_.name, config_.model.position.scheme,
            workload_->describe(), workload_->model().parameter_count(), start, config_.steps);
  log->info("memory: {} estimated, limit {}", memory_.describe(),
            memory_budget().bytes ? format_bytes(memory_budget().bytes) + " (" + memory_budget().source + ")" : "none");
  workload_->model().train();
  double last_loss = metrics_.empty() ? 0.0 : metrics_.back().loss;
  {
    Progress progress(*log, start, config_.steps);
    for (int64_t step = start; step < config_.steps; ++step) {
      const double lr = optim::learning_rate(config_.optim.schedule, step);
      const StepResult r = take_step(step, lr);
      if (r.bad.empty()) {
        last_loss = r.loss;
      } else {
        log->warn("step {}: non-finite value in {} ({})", step + 1, r.bad,
                  config_.on_nonfinite == "skip" ? "step skipped" : "run stopped");
        if (config_.on_nonfinite == "stop") {
          summary.stopped_non_finite = true;
          summary.step = step;
          break;
        }
      }
      progress.add_tokens(workload_->batch_tokens());
      const int64_t done = step + 1;
      if (done % config_.log_every == 0 || done == config_.steps)
        metrics_.push_back(progress.log(done, r.loss, lr, r.grad_norm));
      else
        progress.tick(done);
      if (config_.checkpoint_every > 0 && done % config_.checkpoint_every == 0 && done != config_.steps) save(done);
      summary.step = done;
    }
  }
  // A resumed run that took no step (it had already reached config.steps) keeps its checkpoint
  // and `latest` as they are: saving again would rewrite them for nothing.
  if (!summary.stopped_non_finite && !(summary.resumed && summary.step == start)) save(summary.step);
  summary.last_loss = last_loss;
  summary.checkpoint = read_latest(dir_);
  log->info("run {}: finished at step {} (loss {:.4f}); checkpoint {}", config_.name, summary.step, last_loss,
            summary.checkpoint);
  log->flush();
  return summary;
}

std::vector<LengthResult> Run::evaluate(const std::vector<int64_t>& lengths, int64_t tokens) {
  std::vector<int64_t> mult;
  if (lengths.empty()) mult = config_.eval_multipliers;
  else
    for (int64_t l : lengths) {
      RPB_CHECK(l > 0 && l % config_.length == 0, "eval", "length ", l, " is not a positive multiple of the train length ",
                config_.length);
      mult.push_back(l / config_.length);
    }
  return workload_->evaluate(mult, tokens);
}

}  // namespace rpb
