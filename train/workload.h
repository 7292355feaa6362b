// rpb/train/workload.h: what a run trains and evaluates (a 1-D language model on a token task,
// or a 2-D grid model); the Run around it owns the optimizer, the loop and the checkpoints.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/transformer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"
#include "train/config/model.h"
#include "train/data/batch_sampler.h"
#include "train/data/task.h"
#include "train/data/task_options.h"
#include "train/run/eval_result.h"

namespace rpb {

class EvalProgress;

/// The part of each global training batch this process computes under data parallelism (train/dist/distributed.h):
/// rows [index * B / count, (index + 1) * B / count) of the batch of run.batch rows every rank draws alike.
struct Shard {
  int64_t index = 0;  // this rank
  int64_t count = 1;  // ranks; 1: the whole batch
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual nn::Module& model() = 0;
  /// One line naming the task and its parameters.
  virtual std::string describe() const = 0;
  /// exp(entropy rate) where the task knows it.
  virtual std::optional<double> optimal_perplexity() const = 0;
  /// The identity of the data beyond the config (kjv's text, train/checkpoint/data_identity.h); empty for generated data.
  virtual DataIdentity data_identity() const { return {}; }
  /// Tokens (or cells) in one training batch, for the tokens/s figure.
  virtual int64_t batch_tokens() const = 0;
  /// The loss of `shard` of the next training batch (the mean over its rows), the batch drawn from the
  /// workload's sampler as a single process draws it, so the shards of all ranks make up that batch. `step` is
  /// the step being taken: with several shards, dropout draws its masks from a stream of (run.seed, step, shard
  /// index) (Workload::shard_dropout), so a run is the same for the same rank count and resumes anywhere.
  virtual Tensor next_loss(const Shard& shard, int64_t step) = 0;
  /// The generator states and counters that fix the following batches and dropout masks.
  virtual void save_state(Checkpoint& c) const = 0;
  /// Restores what save_state wrote; errors name `file` and what is missing.
  virtual void load_state(const Checkpoint& c, const std::string& file) = 0;
  /// Held-out perplexity on `split` at each multiple of the train length (or grid side): the test split scores
  /// run.eval_tokens, the valid split run.valid_tokens, the same tokens (or grids) at every call. `tokens` > 0 asks
  /// for that many target tokens at every length instead (rounded down to a multiple of the longest length), and
  /// throws rpb::Error naming the held-out stream's size when it holds fewer (grids: refused, they score
  /// run.eval_tokens cells). With run.eval_stride S > 0 the test split is scored by sliding windows
  /// (data::EvalWindows: the same tokens, each once, with at least length - S tokens of context; grids refuse it);
  /// the valid split stays nonoverlapping. On the test split with run.eval_diagnostics, each size also gets its attention
  /// diagnostics from one more forward over its sample (the scored forwards are unchanged). In eval mode (no
  /// dropout), recording no tape, drawing from no generator of the training; train mode again after. `progress`
  /// (null: none) hears of each size begun and each batch scored (train/eval_progress.h).
  virtual std::vector<LengthResult> evaluate(const std::vector<int64_t>& multipliers, data::Split split,
                                             int64_t tokens, EvalProgress* progress) = 0;
};

/// Rows [index * B / count, (index + 1) * B / count) of a batch (B, ...) for `shard`; the batch itself when count
/// is 1. Throws when the shards do not divide B.
Tensor shard_rows(const Tensor& batch, const Shard& shard);

/// With several shards, points `dropout` at the stream of (seed, step, shard.index); one shard keeps the
/// generator's own stream (a one-process run draws as it always has).
void shard_dropout(Generator& dropout, uint64_t seed, int64_t step, const Shard& shard);

/// The loss of language model `lm` on `shard` of the batch (inputs, targets), its dropout drawn as shard_dropout says.
Tensor lm_shard_loss(nn::LanguageModel& lm, const Tensor& inputs, const Tensor& targets, uint64_t seed, int64_t step,
                     const Shard& shard);

/// The generator states and counters of a workload that samples token batches, as checkpoints keep them: /rng/dropout,
/// /rng/sampler, /counters/sampler_batches and /counters/vocab.
void save_token_state(Checkpoint& c, const Generator& dropout, const data::BatchSampler::State& sampler, int64_t vocab);
/// Restores the dropout generator from what save_token_state wrote and returns the sampler's state; a checkpoint
/// without /rng/dropout or /rng/sampler is an error naming `file` (a missing /counters/sampler_batches reads as 0).
data::BatchSampler::State load_token_state(const Checkpoint& c, Generator& dropout, const std::string& file);

/// The task options a workload builds its task from: a run that trains keeps a text corpus's ids in a token cache,
/// its sweep's (run_config sets it) or <run.out_dir>/.token_cache; an evaluation keeps none.
data::TaskOptions workload_task_options(const RunConfig& config);

/// The workload `config.task.kind` calls for.
std::unique_ptr<Workload> make_workload(const RunConfig& config);

/// The language-model workload over a 1-D token task (markov, lag, kjv, text).
std::unique_ptr<Workload> make_lm_workload(const RunConfig& config);
/// The retrieval workload over passkey samples (data::TaskInfo::retrieval: passkey): a LanguageModel trained on the
/// answer's loss, evaluated by exact-match accuracy per length and depth (LengthResult::accuracy).
std::unique_ptr<Workload> make_passkey_workload(const RunConfig& config);
/// The algorithmic workload (data::TaskInfo::algorithmic: train/data/algorithmic.h): a LanguageModel, causal or
/// bidirectional as model.causal frames the task, trained on each batch's answers at a length drawn from
/// [task.min_length, run.length], evaluated by per-token accuracy and exact match per length
/// (LengthResult::token_accuracy, LengthResult::accuracy).
std::unique_ptr<Workload> make_algorithmic_workload(const RunConfig& config);
/// The 2-D grid workload (grid2d): a GridModel trained on run.length x run.length grids.
std::unique_ptr<Workload> make_grid_workload(const RunConfig& config);

}  // namespace rpb
