// rpb/train/trainer.h: one training run (model, optimizer, data, checkpoints) and evaluation.
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/config/memory.h"
#include "train/dist/data_parallel.h"
#include "train/progress.h"
#include "train/workload.h"

namespace rpb {

class MetricsCsv;

struct TrainSummary {
  int64_t step = 0;                 // steps completed
  /// The training loss the run's last line reports: metrics.csv's last row's (the mean over the last log interval)
  /// when that row is of `step`, else the last finite step's own; NaN when no step had a finite loss.
  double last_loss = 0;
  bool resumed = false;
  bool stopped_non_finite = false;  // on_nonfinite = "stop" ended the run early
  std::string checkpoint;           // the latest checkpoint file
  /// The SHA-256 (hex) of `checkpoint`'s bytes: of the image the final save wrote, or, for a resumed run that took no
  /// step (and saved nothing), of the checkpoint it was loaded from. "" on data-parallel ranks other than 0 and when
  /// the run stopped on a non-finite value after a step.
  std::string checkpoint_sha256;
  std::string moved_aside;          // with StartOptions::overwrite: where the previous run folder went ("" if kept)
};

/// How Run::train treats a run folder that holds a run it may not simply continue.
struct StartOptions {
  /// `train --extend`: a resumed run may have another run.steps (at least the step it reached); its learning-rate
  /// schedule keeps the horizon the run was started with (run_identity.h match_run), so the rate never jumps up.
  bool extend = false;
  /// `--overwrite`: a folder holding a run of another config (or, for a fresh train, any checkpoint) is moved
  /// aside (move_run_aside: nothing is deleted) and the run starts afresh in a new folder of the same name.
  bool overwrite = false;
};

/// Who takes a Run's steps.
enum class Parallel {
  /// Every rank of the MPI job (train/dist/distributed.h), data-parallel: each computes its shard of the global batch
  /// run.batch, the gradients are averaged, every rank takes the same optimizer step; rank 0 alone writes the run
  /// folder (checkpoints, config, log, metrics). One process when MPI is not running.
  ranks,
  /// This process alone, whatever the job (a distributed sweep gives whole runs to ranks).
  this_process,
};

/// What a Run is built for.
enum class RunPurpose {
  /// Training (and the evaluation after it): the whole task, the model and the optimizer.
  train,
  /// Evaluating a checkpoint (`rpb eval`): the model and the task's test split only; no optimizer and no train or
  /// valid stream (TaskOptions::use is DataUse::evaluate), and the memory estimate counts only those
  /// (MemoryUse::evaluate). train() refuses; restore() loads the parameters alone.
  evaluate,
};

/// A run folder <out_dir>/<name>: config, log, checkpoints (step_<k>.h5) and a `latest` pointer.
class Run {
 public:
  /// Builds the workload (task and model) and the optimizer from `config`. With Parallel::ranks under an MPI job
  /// of N > 1 ranks, run.batch must be a multiple of N (else rpb::Error says so). A fine-tune (run.init_from, built
  /// to train) without run.init_sha256 reads its parent checkpoint here, once, and its SHA-256 becomes the config's
  /// run.init_sha256 (part of the run's identity, so a resumed fine-tune needs the same parent); with it, train()
  /// reads the parent (before it touches the run folder) and refuses a file of another digest, so that a finished
  /// fine-tune is reused (restore()) without reading its parent. Either way the parent's parameters must be finite
  /// and fit this config's model (check_params) before anything trains.
  explicit Run(const RunConfig& config, Parallel parallel = Parallel::ranks, RunPurpose purpose = RunPurpose::train);
  ~Run();

  /// Trains to config.steps, holding the run folder's RunLock throughout (a second process training in
  /// the folder gets "run folder ... is in use by pid N"); first removes the temp files interrupted saves
  /// left (remove_stale_temp_files). With resume, continues from the checkpoint `latest` names
  /// (bit-identical to an uninterrupted run; see resume_point() for a folder whose `latest` is not
  /// valid); with `resume_from` (a checkpoint file of the run folder), continues from that file and points
  /// `latest` at it. Without either, a folder that already holds checkpoints is an error (nothing is
  /// overwritten). A run that starts at step 0 with run.init_from (a fine-tune) takes its parent's parameters and
  /// persistent buffers, nothing else (a fresh optimizer, data order and schedule: weights only, unlike a resume).
  /// A resumed checkpoint's step must lie in [0, config.steps], and its stored config must have the
  /// identity of this one (train/config/run_identity.h; run.steps may differ with options.extend): else rpb::Error lists
  /// the differing keys (changed_config_message), unless options.overwrite moves the folder aside.
  ///
  /// Data-parallel (Parallel::ranks, N > 1 ranks): rank 0 does all of the above that touches the run folder and
  /// the terminal; the others read the checkpoint rank 0 resumed from (the folder must be on a filesystem every
  /// rank sees), start from rank 0's parameters, and stay quiet but for errors. The loss, the non-finite checks,
  /// clipping and the stop on a signal all see values reduced over the ranks, so every rank decides alike.
  ///
  /// Every run.log_every steps (and at every validation and the last step) it logs a row: the mean training loss
  /// of the steps since the previous row (steps whose loss is not finite left out; NaN when none is left), appended
  /// to the run folder's metrics.csv (train/run/metrics_csv.h) and kept for the checkpoints' /metrics. With
  /// run.eval_every > 0 it scores the valid split every eval_every steps and at the last one (Workload::evaluate),
  /// which changes nothing the training draws: a resumed run stays bit-identical. Under InterruptHandlers
  /// (train/interrupt.h), a SIGINT or SIGTERM ends the run after the current step: a checkpoint of that step (and
  /// `latest`), a log line "interrupted at step N; resume with: ...", then rpb::Interrupted is thrown.
  TrainSummary train(bool resume, const std::string& resume_from = {}, const StartOptions& options = {});

  /// The checkpoint the run folder's `latest` names, read, with its file; nullopt when there is none. With
  /// FileDigest::sha256, its Checkpoint::file_sha256 holds the digest of the bytes read.
  std::optional<std::pair<std::string, Checkpoint>> latest(FileDigest digest = FileDigest::none) const;
  /// Puts checkpoint `c` (read from `file`, of this run's architecture) into the model, optimizer and samplers.
  /// Refuses (check_finite, train/checkpoint/checkpoint_finite.h) parameters, buffers or optimizer state that are not finite.
  void restore(const Checkpoint& c, const std::string& file);

  /// Perplexity on the held-out test stream at every length of config.eval_multipliers
  /// (or at `lengths` when given), scoring the same tokens at each length: run.eval_tokens at most, or exactly
  /// `tokens` (> 0; rounded down to a multiple of the longest length, see Workload::evaluate). Shows its progress
  /// as training does (train/eval_progress.h, on stderr: a terminal line, else a log line every
  /// ProgressContext::eval_log_every_s seconds), prefixed with the context's prefix; the numbers do not depend on it.
  /// Throws rpb::Error naming the length when a mean NLL is not finite (a diverged model has no perplexity).
  std::vector<LengthResult> evaluate(const std::vector<int64_t>& lengths = {}, int64_t tokens = 0);

  const RunConfig& config() const { return config_; }
  /// The task, one line.
  std::string describe() const { return workload_->describe(); }
  std::optional<double> optimal_perplexity() const { return workload_->optimal_perplexity(); }
  /// The identity of the run's data beyond its config (kjv's text; train/checkpoint/data_identity.h), recorded in checkpoints.
  DataIdentity data_identity() const { return workload_->data_identity(); }
  nn::Module& model() { return workload_->model(); }
  const std::string& dir() const { return dir_; }
  /// A sweep's position and time for the progress lines, and the command an interrupted run is resumed with.
  void set_context(ProgressContext context) { context_ = std::move(context); }

  /// The shard of each batch this process computes ({0, 1} unless data-parallel).
  const Shard& shard() const { return shard_; }

  /// What on_gradients() calls: the step being taken (1-based) and the parameters, their gradients set.
  using GradientHook = std::function<void(int64_t step, const std::vector<optim::NamedParam>& params)>;
  /// Calls `hook` after each step's backward (data-parallel: on every rank, after the gradients are averaged),
  /// before the gradients are checked for NaN and Inf, clipped and applied: to log, inspect or change them (the fault tests inject a NaN this way). One hook; an empty
  /// function removes it.
  void on_gradients(GradientHook hook) { gradient_hook_ = std::move(hook); }
  /// What on_step() calls: the number of steps done.
  using StepHook = std::function<void(int64_t done)>;
  /// Calls `hook` after every step (a distributed sweep's rank 0 answers the other ranks there while it trains a
  /// run itself, train/sweep/work_queue.h). One hook; an empty function removes it.
  void on_step(StepHook hook) { step_hook_ = std::move(hook); }

 private:
  /// What one optimizer step did: the loss, the gradient norm before clipping, and what was not finite ("" when
  /// all was, and the step was taken).
  struct StepResult {
    double loss = 0, grad_norm = 0;
    std::string bad;
    int signal = 0;  // a SIGINT or SIGTERM pending on this process (data-parallel: on any rank) before the step
  };
  /// Resumes (from `resume_from`, or from `latest` with `resume`) or checks the folder holds no
  /// checkpoint; returns the first step to take.
  int64_t start(bool resume, const std::string& resume_from, const StartOptions& options, TrainSummary& summary);
  /// --overwrite: moves the run folder aside and recreates it empty; returns the first step, 0.
  int64_t start_afresh(TrainSummary& summary);
  StepResult take_step(int64_t step, double lr);
  /// The steps from `start` to config.steps and the final save; `csv` null on data-parallel ranks other than 0
  /// (which log only errors and write nothing).
  TrainSummary train_steps(int64_t start, TrainSummary& summary, spdlog::logger& log, MetricsCsv* csv);
  /// Data-parallel: when the effective config of some rank differs from rank 0's, every rank throws the same error
  /// (naming those ranks and the first one's first differing line), which ends the job (cli/main.cpp) instead of
  /// training on mixed configs.
  void check_same_config() const;
  /// Data-parallel, ranks other than 0: resumes from the checkpoint rank 0 resumed from (or starts fresh with
  /// it), then every rank takes rank 0's parameters. Returns rank 0's first step.
  int64_t follow_lead(int64_t start, const StartOptions& options);
  /// Scores the valid split at run.valid_multipliers: a row's valid_loss, (length, mean NLL) of each length the model
  /// can run at, and its valid_accuracy (length, exact-match accuracy) for a passkey task.
  MetricsRow validate();
  /// Logs the row of step `done` (after a validation when one is due) to the log, metrics.csv and metrics_.
  void log_row(int64_t done, double lr, double grad_norm, Progress& progress, MetricsCsv& csv, spdlog::logger& log);
  /// Logs that step `done` (saved) ends the run and how to resume it; throws Interrupted(`signal`).
  [[noreturn]] void interrupted(int signal, int64_t done, spdlog::logger& log);
  Checkpoint snapshot(int64_t step) const;
  /// Saves the checkpoint of `step` and points `latest` at it; returns the digest save_checkpoint returns.
  std::string save(int64_t step, FileDigest digest = FileDigest::none);

  RunConfig config_;
  std::string config_digest_;  // config_digest(config_), set by train() once start() has fixed config_
  Shard shard_;       // this rank's part of every batch
  bool lead_ = true;  // writes the run folder: rank 0, or this process alone
  GradientAverager averager_;
  double communication_s_ = 0;  // data-parallel: this session's seconds in the step's allreduces
  std::string resumed_file_;  // the checkpoint start() resumed from ("" for a fresh run)
  MemoryEstimate memory_;  // of config_, checked against memory_budget() before anything is built
  std::string dir_;
  std::unique_ptr<Workload> workload_;
  std::unique_ptr<optim::Optimizer> optimizer_;  // null for RunPurpose::evaluate
  std::vector<MetricsRow> metrics_;
  double interval_loss_ = 0;     // the finite losses of the steps since the last logged row: their sum
  int64_t interval_steps_ = 0;   // and their count (both saved in checkpoints, so that a resumed mean is the same)
  GradientHook gradient_hook_;
  StepHook step_hook_;
  std::string extend_note_;  // what start() did with --extend, logged once the run's log is open
  /// A fine-tune's parent checkpoint (run.init_from), read by the constructor or train() (see Run()), released by
  /// train() once its parameters are in the model (or the run resumes from a checkpoint of its own).
  std::unique_ptr<Checkpoint> parent_;
  std::string init_note_;    // what start() took from the parent, logged once the run's log is open
  /// Reads run.init_from into parent_ and checks or records its SHA-256 (run.init_sha256).
  void read_parent();
  /// Throws rpb::UsageError when run.device cannot be used here (no CUDA device; CUDA with MPI ranks).
  void check_device() const;
  /// Puts parent_'s parameters and persistent buffers into the model; fills init_note_.
  void init_from_parent();
  ProgressContext context_;
};

/// The optimizer `config.optim` names, over `params` (by name; groups by pattern).
std::unique_ptr<optim::Optimizer> make_optimizer(const OptimConfig& config, const nn::NamedTensors& params);

}  // namespace rpb
