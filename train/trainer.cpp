#include "train/trainer.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "core/parallel.h"
#include "core/text.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/checkpoint/checkpoint_finite.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/memory.h"
#include "train/config/run_identity.h"
#include "train/data/task_registry.h"
#include "train/dist/distributed.h"
#include "train/eval_progress.h"
#include "train/interrupt.h"
#include "train/io/atomic_file.h"
#include "train/io/version.h"
#include "train/run/latest.h"
#include "train/run/log_file_sink.h"
#include "train/run/log_format.h"
#include "train/run/metrics_csv.h"
#include "train/run/resume_point.h"
#include "train/run/run_folder.h"
#include "train/run/run_lock.h"

namespace fs = std::filesystem;

namespace rpb {

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimConfig& c, const nn::NamedTensors& params) {
  if (c.kind == OptimizerKind::sgd) return std::make_unique<optim::SGD>(params, c.sgd);
  return std::make_unique<optim::Adam>(params, c.adam);
}

namespace {

// The run's logger: train.log (every level, each line written as it is logged, see LogFileSink) and the
// terminal (info and up; naming the rank under MPI, as every terminal line does). The file comes first, so a line
// shown on the terminal is already in train.log. One line layout for both (train/run/log_format.h).
std::shared_ptr<spdlog::logger> run_logger(const std::string& dir) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto file = std::make_shared<LogFileSink>((fs::path(dir) / kTrainLogFileName).string());
  console->set_level(spdlog::level::info);
  console->set_pattern(log_pattern(dist::rank(), dist::size(), /*colour=*/true));
  file->set_level(spdlog::level::debug);
  file->set_pattern(log_pattern());
  auto logger = std::make_shared<spdlog::logger>("run", spdlog::sinks_init_list{file, console});
  logger->set_level(spdlog::level::debug);
  return logger;
}

// The logger of a data-parallel rank other than 0: errors only, to the terminal, naming the rank.
std::shared_ptr<spdlog::logger> quiet_logger() {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_pattern(log_pattern(dist::rank(), dist::size(), /*colour=*/true));
  auto logger = std::make_shared<spdlog::logger>("run", console);
  logger->set_level(spdlog::level::err);
  return logger;
}

// What starts each of a run's log lines: a sweep's prefix ("[3/72] markov / t5 / seed 0:", naming the run's task,
// method and seed) and a space; "" for a run of its own.
std::string lead(const ProgressContext& c) { return c.prefix.empty() ? "" : c.prefix + " "; }

// Who a run's summary lines are about: the sweep's prefix, else "run <name>:".
std::string who(const ProgressContext& c, const std::string& name) {
  return c.prefix.empty() ? "run " + name + ":" : c.prefix;
}

// The loss the line that ends a run reports, and what it is: metrics.csv's last row when it is of the run's last step
// (the mean training loss since the row before, as the step's log line shows it), else the last finite step's own
// (a run stopped on a non-finite value logs no row at its step).
std::pair<double, std::string> final_loss(const std::vector<MetricsRow>& metrics, int64_t step,
                                          std::optional<double> last_step_loss) {
  if (!metrics.empty() && metrics.back().step == step)
    return {metrics.back().loss, fmt::format("train loss {:.4f}, the mean over the last log interval as in "
                                             "metrics.csv", metrics.back().loss)};
  if (last_step_loss)
    return {*last_step_loss, fmt::format("train loss of the last finite step {:.4f}", *last_step_loss)};
  return {std::nan(""), "no finite train loss"};
}

// The first parameter (in order) holding a NaN or an Inf: the likely cause of a non-finite loss.
std::optional<std::string> first_non_finite_param(const std::vector<optim::NamedParam>& params) {
  for (const auto& p : params)
    for (double v : p.param.to_vector())
      if (!std::isfinite(v)) return p.name;
  return std::nullopt;
}

}  // namespace

Run::Run(const RunConfig& config, Parallel parallel, RunPurpose purpose)
    : config_(config),
      memory_(estimate_memory(config_, vocab_bound(config_),
                              purpose == RunPurpose::train ? MemoryUse::train : MemoryUse::evaluate)) {
  if (purpose == RunPurpose::evaluate) config_.task.use = data::DataUse::evaluate;
  if (parallel == Parallel::ranks && dist::size() > 1) {
    shard_ = {dist::rank(), dist::size()};
    lead_ = dist::rank() == 0;
    RPB_CHECK(config_.batch % dist::size() == 0, "train", config_.source.empty() ? "" : config_.source + ": ",
              "run.batch = ", config_.batch, " is the global batch, split evenly over the ", dist::size(),
              " MPI ranks, and ", dist::size(), " does not divide it (use a multiple of ", dist::size(), ")");
  }
  dir_ = config_.run_dir();
  check_device();
  check_memory(memory_, memory_budget(), "run " + config_.name);
  workload_ = make_workload(config_);
  // The model trains and evaluates on run.device; the optimizer's state follows its parameters there.
  if (config_.device != Device::cpu) workload_->model().to(config_.device);
  if (purpose == RunPurpose::train) optimizer_ = make_optimizer(config_.optim, workload_->model().named_parameters());
  // The parent's digest is part of the run's identity: without run.init_sha256 it is read now, to learn it; with it
  // (a sweep passes the digest it has just computed), train() reads it, so a reused fine-tune never does.
  if (purpose == RunPurpose::train && !config_.init_from.empty() && config_.init_sha256.empty()) read_parent();
}

void Run::check_device() const {
  if (config_.device == Device::cpu) return;
  const std::string where = config_.source.empty() ? "" : config_.source + ": ";
  if (!cuda_available())
    throw UsageError(where + "run.device = \"cuda\", and no CUDA device is available (" + cuda_device_description() +
                     "); set run.device = \"cpu\" (--set run.device=\"cpu\", or --device cpu) to run on the CPU");
  if (shard_.count > 1)
    throw UsageError(where + "run.device = \"cuda\" runs in one process: data parallelism over " +
                     std::to_string(shard_.count) + " MPI ranks is for the CPU in this version");
}

int64_t Run::follow_lead(int64_t start, const StartOptions& options) {
  std::string file = resumed_file_;
  dist::broadcast(&start, sizeof start);
  dist::broadcast(file);
  if (!lead_ && !file.empty()) {
    const Checkpoint c = load_checkpoint(file);
    // The same config as rank 0's (check_same_config) and the same file: the match rank 0 made, extension included.
    config_ = match_run(c.config_text, file, config_, options.extend).config;
    restore(c, file);
  }
  broadcast_tensors(workload_->model().named_parameters());
  broadcast_tensors(workload_->model().named_buffers());
  return start;
}

Run::StepResult Run::take_step(int64_t step, double lr) {
  StepResult r;
  optimizer_->zero_grad();
  Tensor loss = workload_->next_loss(shard_, step);
  r.loss = loss.item();
  r.signal = pending_interrupt();
  if (shard_.count > 1) {
    // The ranks agree on the mean loss and on a stop: a non-finite loss on one rank makes the sum non-finite.
    if (std::isfinite(r.loss)) backward(loss);
    else tape().clear();
    const auto t0 = std::chrono::steady_clock::now();
    double sum = r.loss;
    int64_t signal = r.signal;
    dist::allreduce_sum(&sum, 1);
    dist::allreduce_max(&signal, 1);
    r.loss = sum / static_cast<double>(shard_.count);
    r.signal = static_cast<int>(signal);
    if (std::isfinite(r.loss)) averager_.average(optimizer_->params());
    communication_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (!std::isfinite(r.loss)) {
    r.bad = "the loss";
    if (auto name = first_non_finite_param(optimizer_->params()))
      r.bad += " (parameter " + *name + " holds a NaN or an Inf)";
    tape().clear();
    return r;
  }
  if (shard_.count == 1) backward(loss);
  if (gradient_hook_) gradient_hook_(step + 1, optimizer_->params());
  if (auto name = optim::first_non_finite_grad(optimizer_->params())) {
    r.bad = "the gradient of " + *name;
    return r;
  }
  // optim.grad_clip = 0: no clipping, the norm still logged.
  r.grad_norm = config_.optim.grad_clip > 0 ? optim::clip_grad_norm(optimizer_->params(), config_.optim.grad_clip)
                                            : optim::global_grad_norm(optimizer_->params());
  optimizer_->step(lr);
  workload_->model().project_parameters();  // the parameters' constraints (nn/module.h)
  return r;
}

MetricsRow Run::validate() {
  MetricsRow out{};
  for (const LengthResult& r : workload_->evaluate(config_.valid_multipliers, data::Split::valid, 0, nullptr)) {
    if (r.nll && !std::isnan(*r.nll)) out.valid_loss.emplace_back(r.length, *r.nll);
    if (r.accuracy) out.valid_accuracy.emplace_back(r.length, *r.accuracy);
  }
  return out;
}

void Run::log_row(int64_t done, double lr, double grad_norm, Progress& progress, MetricsCsv& csv,
                  spdlog::logger& log) {
  MetricsRow valid{};
  double valid_secs = 0;
  if (config_.eval_every > 0 && (done % config_.eval_every == 0 || done == config_.steps)) {
    const auto t0 = std::chrono::steady_clock::now();
    valid = validate();
    valid_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress.exclude(valid_secs);
  }
  const double mean = interval_steps_ > 0 ? interval_loss_ / static_cast<double>(interval_steps_) : std::nan("");
  MetricsRow row = progress.log(done, mean, lr, grad_norm, valid.valid_loss);
  interval_loss_ = 0;
  interval_steps_ = 0;
  if (!valid.valid_loss.empty()) {
    std::string line;
    for (const auto& [length, nll] : valid.valid_loss) {
      line += fmt::format("{}length {} loss {:.4f} ppl {:.3f}", line.empty() ? "" : ", ", length, nll, std::exp(nll));
      for (const auto& [l, accuracy] : valid.valid_accuracy)
        if (l == length) line += fmt::format(" accuracy {:.1f}%", 100 * accuracy);
    }
    log.log(progress.level(), "{}step {}/{} valid: {} ({:.2f} s)", lead(context_), done, config_.steps, line,
            valid_secs);
  }
  row.valid_loss = std::move(valid.valid_loss);
  row.valid_accuracy = std::move(valid.valid_accuracy);
  csv.append(row);
  metrics_.push_back(std::move(row));
}

void Run::interrupted(int signal, int64_t done, spdlog::logger& log) {
  const std::string command =
      context_.resume_command.empty() ? "build/rpb train " + config_.source + " --resume" : context_.resume_command;
  log.warn("{}{}: checkpoint {} saved", lead(context_), Interrupted(signal).what(), read_latest(dir_));
  log.warn("{}interrupted at step {}; resume with: {}", lead(context_), done, command);
  log.flush();
  throw Interrupted(signal);
}

TrainSummary Run::train(bool resume, const std::string& resume_from, const StartOptions& options) {
  RPB_CHECK(optimizer_ != nullptr, "train", "run ", config_.name, " was built to evaluate a checkpoint, not to train");
  TrainSummary summary;
  const DeferInterrupts defer;  // a SIGINT, SIGTERM or SIGUSR1 waits for the end of a step (train/interrupt.h)
  std::unique_ptr<RunLock> lock;  // held until the final save is done
  std::vector<std::string> stale;
  int64_t start = 0;
  if (shard_.count > 1) check_same_config();
  if (!config_.init_from.empty() && !parent_) read_parent();  // its digest was given: checked here, before the folder
  const auto open_folder = [&] {
    create_run_folder(config_.out_dir, dir_);
    lock = std::make_unique<RunLock>(dir_);
    stale = remove_stale_temp_files(dir_);
    start = this->start(resume, resume_from, options, summary);
    if (!summary.moved_aside.empty()) lock = std::make_unique<RunLock>(dir_);  // the new folder's
    if (parent_ && !summary.resumed) init_from_parent();  // data-parallel: follow_lead sends the parameters on
  };
  // Data-parallel, the folder is rank 0's: an error there (a run folder that may not be continued) ends every
  // rank alike, through MPI_Finalize, rather than rank 0 alone while the others wait in follow_lead.
  if (shard_.count > 1) dist::on_root(open_folder);
  else open_folder();
  parent_.reset();  // resumed, or in the model (data-parallel ranks other than 0 take rank 0's parameters)
  if (shard_.count > 1) start = follow_lead(start, options);
  if (!lead_) return train_steps(start, summary, *quiet_logger(), nullptr);
  config_digest_ = config_digest(config_);
  auto log = run_logger(dir_);
  write_file_atomically((fs::path(dir_) / kConfigFileName).string(), digest_line(config_) + config_.text);
  if (!summary.moved_aside.empty())
    log->info("{}--overwrite: moved the previous run folder aside to {}", lead(context_), summary.moved_aside);
  if (!extend_note_.empty()) log->info("{}{}", lead(context_), extend_note_);
  if (!init_note_.empty()) log->info("{}{}", lead(context_), init_note_);
  if (config_.device != Device::cpu) log->info("{}device: {}", lead(context_), cuda_device_description());
  const data::TaskInfo& task = data::task_info(config_.task.kind);
  const bool accuracy = task.retrieval || task.algorithmic;  // validation accuracy columns: exact match
  MetricsCsv csv((fs::path(dir_) / kMetricsFileName).string(), config_.valid_lengths(), metrics_,
                 workload_->batch_tokens(), accuracy ? config_.valid_lengths() : std::vector<int64_t>{});
  if (!stale.empty()) {
    std::string names;
    for (const std::string& n : stale) names += (names.empty() ? "" : ", ") + n;
    log->info("{}removed {} stale temp file(s) of interrupted saves: {}", lead(context_), stale.size(), names);
  }
  log->info("{} {} on {}, {} parameters, steps {}..{}", who(context_, config_.name), config_.model.position.scheme,
            workload_->describe(), workload_->model().parameter_count(), start, config_.steps);
  log->info("{}memory: {} estimated, limit {}", lead(context_), memory_.describe(),
            memory_budget().bytes ? format_bytes(memory_budget().bytes) + " (" + memory_budget().source + ")" : "none");
  if (shard_.count > 1)
    log->info("data-parallel over {} ranks: {} rows each of the batch of {}, {} thread{} per rank ({} hardware "
              "threads, {} ranks on this node)",
              shard_.count, config_.batch / shard_.count, config_.batch, num_threads(), num_threads() == 1 ? "" : "s",
              std::thread::hardware_concurrency(), dist::local_size());
  return train_steps(start, summary, *log, &csv);
}

TrainSummary Run::train_steps(int64_t start, TrainSummary& summary, spdlog::logger& log, MetricsCsv* csv) {
  workload_->model().train();
  std::optional<double> last_loss;  // the last finite step's
  bool saved = false;  // a periodic save wrote the checkpoint of summary.step
  int signal = 0;      // the signal that ends the run (data-parallel: seen by some rank)
  const auto t0 = std::chrono::steady_clock::now();
  communication_s_ = 0;
  {
    Progress progress(log, start, config_.steps, metrics_.empty() ? 0.0 : metrics_.back().elapsed_s, context_);
    for (int64_t step = start; step < config_.steps; ++step) {
      const double lr = optim::learning_rate(config_.optim.schedule, step);
      const StepResult r = take_step(step, lr);
      if (std::isfinite(r.loss)) {  // a step skipped for a non-finite gradient still measured its loss
        interval_loss_ += r.loss;
        ++interval_steps_;
      }
      if (r.bad.empty()) {
        last_loss = r.loss;
      } else {
        log.warn("{}step {}: non-finite value in {} ({})", lead(context_), step + 1, r.bad,
                 config_.on_nonfinite == OnNonFinite::skip ? "step skipped" : "run stopped");
        if (config_.on_nonfinite == OnNonFinite::stop) {
          summary.stopped_non_finite = true;
          summary.step = step;
          break;
        }
      }
      progress.add_tokens(workload_->batch_tokens());
      const int64_t done = step + 1;
      const bool validating = config_.eval_every > 0 && done % config_.eval_every == 0;
      if (csv == nullptr) {  // a data-parallel rank other than 0: no rows, no files
        interval_loss_ = 0;
        interval_steps_ = 0;
      } else if (validating || done % config_.log_every == 0 || done == config_.steps) {
        log_row(done, lr, r.grad_norm, progress, *csv, log);
      } else {
        progress.tick(done);
      }
      saved = config_.checkpoint_every > 0 && done % config_.checkpoint_every == 0 && done != config_.steps;
      if (saved && lead_) save(done);
      summary.step = done;
      if (step_hook_) step_hook_(done);
      // A SIGINT, SIGTERM or SIGUSR1: the step is saved below, then Interrupted. Data-parallel, every rank stops
      // after the step in which some rank saw it (take_step reduced it), so all stop together.
      signal = shard_.count > 1 ? r.signal : pending_interrupt();
      if (signal) break;
    }
  }
  // A resumed run that took no step (it had already reached config.steps) keeps its checkpoint
  // and `latest` as they are: saving again would rewrite them for nothing.
  if (lead_ && !summary.stopped_non_finite && !saved && !(summary.resumed && summary.step == start))
    summary.checkpoint_sha256 = save(summary.step, FileDigest::sha256);
  else if (summary.step != start)
    summary.checkpoint_sha256.clear();  // `latest` names a periodic save, not hashed
  if (signal == 0) signal = pending_interrupt();  // during the last step or the save (data-parallel: this rank's)
  if (signal && !summary.stopped_non_finite) interrupted(signal, summary.step, log);
  if (shard_.count > 1 && summary.step > start) {
    const double steps = static_cast<double>(summary.step - start);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log.info("data-parallel: {:.3f} ms per step in MPI_Allreduce (the loss, a stop, {} bytes of gradients), {:.1f}% "
             "of the {:.3f} ms per step on rank 0",
             1e3 * communication_s_ / steps, averager_.bytes(), 100 * communication_s_ / total, 1e3 * total / steps);
  }
  std::string loss_text;
  std::tie(summary.last_loss, loss_text) = final_loss(metrics_, summary.step, last_loss);
  if (lead_) summary.checkpoint = read_latest(dir_);
  log.info("{} finished at step {} ({}); checkpoint {}", who(context_, config_.name), summary.step, loss_text,
           summary.checkpoint);
  log.flush();
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
  EvalProgress progress(*spdlog::default_logger(), context_.prefix, static_cast<int64_t>(mult.size()),
                        config_.dims() == 2, context_.eval_log_every_s);
  std::vector<LengthResult> results = workload_->evaluate(mult, data::Split::test, tokens, &progress);
  for (const LengthResult& r : results)
    RPB_CHECK(!r.nll || std::isfinite(*r.nll), "eval", "the mean NLL at length ", r.length, " is ",
              std::isnan(*r.nll) ? "nan" : "inf", ": the model's outputs are not finite numbers (a diverged model), so ",
              "it has no perplexity to report");
  return results;
}

}  // namespace rpb
