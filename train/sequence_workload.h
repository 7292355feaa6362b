// rpb/train/sequence_workload.h: what the two workloads of a decoder-only language model share (the language model on
// a token task, train/workload_lm.cpp; passkey retrieval, train/workload_passkey.cpp): the model, the task's
// description and data identity, and the training batches drawn from a sampler whose state checkpoints keep.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/autograd.h"
#include "core/error.h"
#include "nn/attention_stats.h"
#include "nn/transformer.h"
#include "train/checkpoint/data_identity.h"
#include "train/data/task.h"
#include "train/workload.h"

namespace rpb {

/// A Workload that trains a LanguageModel on token batches drawn by a `Sampler` (data::BatchSampler,
/// data::PasskeySampler: next(inputs, targets), state() and set_state() of a data::BatchSampler::State). The subclass
/// builds model_ and, when the run trains, sampler_, names its task (task()) and evaluates.
template <class Sampler>
class SequenceWorkload : public Workload {
 public:
  nn::Module& model() override { return *model_; }
  std::string describe() const override { return task().describe(); }
  std::optional<double> optimal_perplexity() const override { return task().optimal_perplexity(); }
  DataIdentity data_identity() const override { return rpb::data_identity(task()); }
  int64_t batch_tokens() const override { return config_.batch * config_.train_length(); }

  Tensor next_loss(const Shard& shard, int64_t step) override {
    RPB_CHECK(sampler_ != nullptr, "train", "the workload was built without its ", training_data_);
    Tensor inputs, targets;
    sampler_->next(inputs, targets);
    return lm_shard_loss(*model_, inputs, targets, config_.seed, step, shard);
  }

  void save_state(Checkpoint& c) const override {
    save_token_state(c, model_->dropout_generator(), sampler_->state(), task().vocab());
  }

  void load_state(const Checkpoint& c, const std::string& file) override {
    sampler_->set_state(load_token_state(c, model_->dropout_generator(), file));
  }

 protected:
  /// The evaluation of a workload whose every length draws its own held-out samples (passkey retrieval, the
  /// algorithmic tasks): refuses a token count, naming `task` and what each length `scores` instead; in eval mode
  /// (train mode again after), each multiplier's LengthResult with its length and multiplier set, which
  /// `score_length(i, r)` fills where the model's positions reach the `sample_tokens(length)` tokens of its samples
  /// (learned positions end at their table; the others stay nullopt there).
  template <class SampleTokens, class ScoreLength>
  std::vector<LengthResult> evaluate_lengths(const std::vector<int64_t>& mult, int64_t tokens, const char* task,
                                             const std::string& scores, SampleTokens sample_tokens,
                                             ScoreLength score_length) {
    RPB_CHECK(tokens == 0, "eval", "a token count (", tokens, ") does not apply to ", task, ": every length scores ",
              scores);
    model_->eval();
    std::vector<LengthResult> out;
    const int64_t limit = model_->max_length();  // learned positions end at their table
    for (std::size_t i = 0; i < mult.size(); ++i) {
      LengthResult r;
      r.length = mult[i] * config_.length;
      r.multiplier = mult[i];
      if (limit == 0 || sample_tokens(r.length) <= limit) score_length(i, r);
      out.push_back(std::move(r));
    }
    model_->train();
    return out;
  }

  /// The attention diagnostics of the queries `queries` marks ((rows, T) i64, 1 at a query counted: an answer's
  /// positions) in recorded forwards over the first `rows` samples of `inputs` (N, T), run.eval_batch at a time.
  AttentionDiagnostics query_diagnostics(const Tensor& inputs, const Tensor& queries) const {
    NoGradGuard no_grad;
    const int64_t rows = queries.size(0);
    nn::AttentionStatsRecorder recorder(model_->attention_layers());
    for (int64_t b = 0; b < rows; b += config_.eval_batch) {
      const int64_t e = std::min(rows, b + config_.eval_batch);
      recorder.count_only(slice(queries, 0, b, e));
      model_->forward(slice(inputs, 0, b, e));
    }
    return attention_diagnostics(recorder.layers());
  }

  /// `training_data` names what the sampler draws from, in the error of a workload built without it ("training
  /// stream").
  SequenceWorkload(const RunConfig& config, const char* training_data)
      : config_(config), training_data_(training_data) {}

  /// The task the batches and the held-out data come from.
  virtual const data::Task& task() const = 0;

  RunConfig config_;
  std::unique_ptr<nn::LanguageModel> model_;
  std::unique_ptr<Sampler> sampler_;  // null when the run does not train (an evaluation)

 private:
  const char* training_data_;
};

}  // namespace rpb
