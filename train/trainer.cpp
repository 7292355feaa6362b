#include "train/trainer.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <toml++/toml.h>

#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/latest.h"
#include "train/version.h"

namespace fs = std::filesystem;

namespace rpb {

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimConfig& c, const nn::NamedTensors& params) {
  if (c.kind == "sgd") return std::make_unique<optim::SGD>(params, c.sgd);
  return std::make_unique<optim::Adam>(params, c.adam);
}

namespace {

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld.h5", static_cast<long long>(step));
  return buf;
}

// The configuration that must not change across a resume: everything but the run's
// length, logging and evaluation settings, and the sweep.
std::string identity_of(const std::string& text) {
  toml::table t = toml::parse(text);
  if (toml::table* run = t["run"].as_table())
    for (const char* k : {"steps", "log_every", "checkpoint_every", "eval_multipliers", "eval_tokens", "eval_batch"})
      run->erase(k);
  t.erase("sweep");
  if (toml::table* g = t["grid"].as_table()) g->erase("eval_window");
  if (toml::table* o = t["optim"].as_table()) o->erase("min_lr_ratio");
  std::ostringstream os;
  os << t;
  return os.str();
}

std::shared_ptr<spdlog::logger> run_logger(const std::string& dir) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>((fs::path(dir) / "train.log").string());
  console->set_level(spdlog::level::info);
  file->set_level(spdlog::level::debug);
  auto logger = std::make_shared<spdlog::logger>("run", spdlog::sinks_init_list{console, file});
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

Run::Run(const RunConfig& config) : config_(config) {
  dir_ = config_.run_dir();
  workload_ = make_workload(config_);
  optimizer_ = make_optimizer(config_.optim, workload_->model().named_parameters());
}

Run::~Run() = default;

Checkpoint Run::snapshot(int64_t step) const {
  Checkpoint c;
  c.step = step;
  c.config_text = config_.text;
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

TrainSummary Run::train(bool resume) {
  fs::create_directories(dir_);
  TrainSummary summary;
  int64_t start = 0;
  const std::string latest = read_latest(dir_);
  if (resume && !latest.empty()) {
    const Checkpoint c = load_checkpoint(latest);
    RPB_CHECK(identity_of(c.config_text) == identity_of(config_.text), "train",
              "the config differs from the one ", latest,
              " was trained with (only run.steps and the logging/eval keys may change on --resume)");
    restore(c, latest);
    start = c.step;
    summary.resumed = true;
    summary.step = start;  // a run resumed at or past config.steps takes no step
  } else {
    RPB_CHECK(latest.empty(), "train", dir_, " already holds checkpoints (", latest,
              "); use --resume to continue it or choose another run.name");
  }
  {
    std::ofstream cfg(fs::path(dir_) / "config.toml");
    cfg << config_.text;
  }
  auto log = run_logger(dir_);
  const bool tty = isatty(STDERR_FILENO);
  log->info("run {}: {} on {}, {} parameters, steps {}..{}", config_.name, config_.model.position.scheme,
            workload_->describe(), workload_->model().parameter_count(), start, config_.steps);

  workload_->model().train();
  const auto t0 = std::chrono::steady_clock::now();
  auto window_start = t0;
  int64_t window_tokens = 0;
  double last_loss = metrics_.empty() ? 0.0 : metrics_.back().loss;
  for (int64_t step = start; step < config_.steps; ++step) {
    const double lr = optim::learning_rate(config_.optim.schedule, step);
    optimizer_->zero_grad();
    Tensor loss = workload_->next_loss();
    const double lv = loss.item();
    std::string bad;
    if (!std::isfinite(lv)) {
      bad = "the loss";
      if (auto name = first_non_finite_param(optimizer_->params()))
        bad += " (parameter " + *name + " holds a NaN or an Inf)";
      tape().clear();
    } else {
      backward(loss);
      if (gradient_hook_) gradient_hook_(step + 1, optimizer_->params());
      if (auto name = optim::first_non_finite_grad(optimizer_->params())) bad = "the gradient of " + *name;
    }
    double norm = 0;
    if (bad.empty()) {
      norm = config_.optim.grad_clip > 0 ? optim::clip_grad_norm(optimizer_->params(), config_.optim.grad_clip)
                                          : optim::clip_grad_norm(optimizer_->params(), INFINITY);
      optimizer_->step(lr);
      last_loss = lv;
    } else {
      log->warn("step {}: non-finite value in {} ({})", step + 1, bad,
                config_.on_nonfinite == "skip" ? "step skipped" : "run stopped");
      if (config_.on_nonfinite == "stop") {
        summary.stopped_non_finite = true;
        summary.step = step;
        break;
      }
    }
    window_tokens += workload_->batch_tokens();
    const int64_t done = step + 1;
    if (done % config_.log_every == 0 || done == config_.steps) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - window_start).count();
      const double tps = secs > 0 ? static_cast<double>(window_tokens) / secs : 0.0;
      metrics_.push_back({done, lv, lr, norm, tps});
      const double elapsed = std::chrono::duration<double>(now - t0).count();
      const double eta = elapsed / static_cast<double>(done - start) * static_cast<double>(config_.steps - done);
      if (tty)
        std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  ETA %.0fs   ",
                     static_cast<long long>(done), static_cast<long long>(config_.steps), lv, lr, tps, eta);
      log->log(tty ? spdlog::level::debug : spdlog::level::info, "step {}/{} loss {:.4f} lr {:.3e} grad_norm {:.3f} {:.0f} tok/s ETA {:.0f}s",
               done, config_.steps, lv, lr, norm, tps, eta);
      window_start = now;
      window_tokens = 0;
    }
    if (config_.checkpoint_every > 0 && done % config_.checkpoint_every == 0 && done != config_.steps) save(done);
    summary.step = done;
  }
  if (tty) std::fprintf(stderr, "\n");
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

std::vector<LengthResult> Run::evaluate(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> mult;
  if (lengths.empty()) mult = config_.eval_multipliers;
  else
    for (int64_t l : lengths) {
      RPB_CHECK(l > 0 && l % config_.length == 0, "eval", "length ", l, " is not a positive multiple of the train length ",
                config_.length);
      mult.push_back(l / config_.length);
    }
  return workload_->evaluate(mult);
}

}  // namespace rpb
