// rpb/train/trainer_state.cpp: a Run's state on disk (train/trainer.h): its checkpoints (a snapshot and its
// restoration, saving, the latest one), and where a run starts: afresh, resumed from its folder, or from the parent a
// fine-tune continues (run.init_from).
#include <filesystem>
#include <utility>

#include "core/text.h"
#include "train/checkpoint/checkpoint_finite.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/stored_model.h"
#include "train/config/run_identity.h"
#include "train/dist/distributed.h"
#include "train/io/version.h"
#include "train/run/latest.h"
#include "train/run/resume_point.h"
#include "train/run/run_folder.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace rpb {

void Run::read_parent() {
  const std::string& file = config_.init_from;
  auto c = std::make_unique<Checkpoint>(load_checkpoint(file, /*in_run_folder=*/false, FileDigest::sha256));
  if (!config_.init_sha256.empty() && c->file_sha256 != config_.init_sha256)
    throw Error(fmt::format("{}: run.init_from = {} has SHA-256 {}, and run.init_sha256 pins the fine-tune to the "
                            "parent {}: this is another checkpoint (or the parent was rewritten)",
                            config_.source, printable(file), c->file_sha256, config_.init_sha256));
  check_finite(*c, file);
  check_params(*c, workload_->model().named_parameters(), file);
  if (config_.init_sha256.empty()) {
    const std::string& sha = c->file_sha256;
    config_ = derive_config(config_, {parent_pin(sha)}, "run.init_from's SHA-256");
  }
  parent_ = std::move(c);
}

void Run::init_from_parent() {
  load_parameters(*parent_, workload_->model(), config_.init_from);
  init_note_ = fmt::format("fine-tune: parameters and buffers from {} (step {}, SHA-256 {}), a fresh optimizer, "
                           "training at length {}", config_.init_from, parent_->step, config_.init_sha256,
                           config_.train_length());
}

Run::~Run() = default;

namespace {

// The counters (/state) of the interval mean: the loss sum, as the bits of the double, and the step count.
constexpr const char* kIntervalSum = "interval_loss_sum_bits";
constexpr const char* kIntervalSteps = "interval_loss_steps";

// Tensors as a checkpoint stores them: on the host (a run on cuda saves the same file as on the CPU).
nn::NamedTensors on_host(nn::NamedTensors tensors) {
  for (auto& [name, t] : tensors) t = t.to(Device::cpu);
  return tensors;
}
}  // namespace

Checkpoint Run::snapshot(int64_t step) const {
  Checkpoint c;
  c.step = step;
  c.config_text = config_.text;
  c.config_digest = config_digest_;
  c.library_version = version();
  c.params = on_host(workload_->model().named_parameters());
  c.buffers = on_host(workload_->model().named_buffers(true));
  c.optim = optimizer_->state();
  c.optim.tensors = on_host(std::move(c.optim.tensors));
  workload_->save_state(c);
  c.counters.emplace_back(kIntervalSum, std::bit_cast<int64_t>(interval_loss_));
  c.counters.emplace_back(kIntervalSteps, interval_steps_);
  c.metrics = metrics_;
  c.data = workload_->data_identity();
  return c;
}

void Run::restore(const Checkpoint& c, const std::string& file) {
  check_finite(c, file);
  load_parameters(c, workload_->model(), file);
  if (!optimizer_) return;  // RunPurpose::evaluate
  optimizer_->load_state(c.optim);
  workload_->load_state(c, file);
  metrics_ = c.metrics;
  interval_loss_ = 0;  // checkpoints of before the interval mean hold neither counter
  interval_steps_ = 0;
  for (const auto& [name, value] : c.counters) {
    if (name == kIntervalSum) interval_loss_ = std::bit_cast<double>(value);
    if (name == kIntervalSteps) interval_steps_ = value;
  }
}

std::string Run::save(int64_t step, FileDigest digest) {
  const std::string name = checkpoint_name(step);
  std::string sha256 = save_checkpoint((fs::path(dir_) / name).string(), snapshot(step), digest);
  write_latest(dir_, name);
  return sha256;
}

std::optional<std::pair<std::string, Checkpoint>> Run::latest(FileDigest digest) const {
  std::string file = read_latest(dir_);
  if (file.empty()) return std::nullopt;
  Checkpoint c = load_own_checkpoint(file, "checkpoint", digest);
  return std::make_pair(std::move(file), std::move(c));
}

int64_t Run::start_afresh(TrainSummary& summary) {
  summary.moved_aside = move_run_aside(dir_);
  fs::create_directories(dir_);
  return 0;
}

int64_t Run::start(bool resume, const std::string& resume_from, const StartOptions& options, TrainSummary& summary) {
  std::optional<ResumePoint> from;
  // The digest of the checkpoint resumed from is what `rpb train` records when no step follows (none is saved).
  if (!resume_from.empty()) from = explicit_resume_point(dir_, resume_from, FileDigest::sha256);
  else if (resume) from = resume_point(dir_, FileDigest::sha256);
  else if (!options.overwrite) check_new_run_folder(dir_);
  else if (!run_folder_checkpoints(dir_).empty()) return start_afresh(summary);
  if (!from) return 0;
  const Checkpoint& c = from->checkpoint;
  const RunMatch match = match_run(c.config_text, from->file, config_, options.extend);
  if (!match.changes.empty()) {
    if (options.overwrite) return start_afresh(summary);
    throw Error(changed_config_message("train", dir_, from->file, match.changes));
  }
  check_resumed_data(c.data, workload_->data_identity(), from->file);
  config_ = match.config;  // with the schedule's horizon the run keeps
  if (match.extended) extend_note_ = extend_note(config_, match.stored_steps);
  check_checkpoint_step(c, config_, from->file);
  restore(c, from->file);
  resumed_file_ = from->file;
  if (!resume_from.empty()) write_latest(dir_, fs::path(from->file).filename().string());
  summary.resumed = true;
  summary.step = c.step;  // a run resumed at config.steps takes no step
  summary.checkpoint_sha256 = c.file_sha256;
  return c.step;
}

void Run::check_same_config() const {
  std::string lead = config_.text;
  dist::broadcast(lead);
  // Every rank learns which ranks differ, so that all throw the same error and the job ends through MPI_Finalize
  // rather than one rank's error leaving the others waiting in the next collective.
  std::vector<int64_t> differs(static_cast<std::size_t>(dist::size()), 0);
  differs[static_cast<std::size_t>(dist::rank())] = lead != config_.text ? 1 : 0;
  dist::allreduce_max(differs.data(), differs.size());
  std::vector<int> ranks;
  for (std::size_t r = 0; r < differs.size(); ++r)
    if (differs[r] != 0) ranks.push_back(static_cast<int>(r));
  if (ranks.empty()) return;
  std::string message;  // the first differing rank's, naming its first differing line
  if (dist::rank() == ranks[0]) {
    std::istringstream a(lead), b(config_.text);
    std::string la, lb;
    int line = 0;
    while (true) {
      ++line;
      const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
      if (la != lb || more_a != more_b) break;
    }
    std::string who = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) who += (i ? ", " : "") + std::to_string(ranks[i]);
    message = fmt::format("train: {} run{} another config than rank 0 (line {} of the effective config: rank 0 has "
                          "\"{}\", rank {} \"{}\"); every rank of a data-parallel run must run the same command",
                          who, ranks.size() == 1 ? "s" : "", line, printable(la, 120), ranks[0], printable(lb, 120));
  }
  dist::broadcast(message, ranks[0]);
  throw Error(message);
}

}  // namespace rpb
