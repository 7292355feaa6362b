// The algorithmic workload: a language model, causal or bidirectional (model.causal frames the task:
// train/data/algorithmic.h), trained on the answers of batches whose length the curriculum draws, and scored by
// per-token accuracy and exact match per length.
#include <algorithm>

#include "nn/transformer.h"
#include "train/data/algorithmic.h"
#include "train/data/task_registry.h"
#include "train/eval_progress.h"
#include "train/sequence_workload.h"
#include "train/workload.h"

namespace rpb {

namespace {

constexpr uint64_t kAlgorithmicSamplerSalt = 0x5eed'a160'0000'0003ull;
// The held-out samples whose attention is diagnosed at every length.
constexpr int64_t kAlgorithmicDiagnosedSamples = 64;

class AlgorithmicWorkload final : public SequenceWorkload<data::AlgorithmicSampler> {
 public:
  explicit AlgorithmicWorkload(const RunConfig& c)
      : SequenceWorkload(c, "training samples"), task_(workload_task_options(c)) {
    Generator init_gen(c.seed);
    model_ = std::make_unique<nn::LanguageModel>(model_options(c, task_.vocab()), init_gen);
    if (c.task.use == data::DataUse::train)
      sampler_ = std::make_unique<data::AlgorithmicSampler>(task_, c.batch, c.train_length(),
                                                            c.seed ^ kAlgorithmicSamplerSalt);
  }

  // A batch's tokens at the longest training length (the curriculum's batches are shorter on average).
  int64_t batch_tokens() const override {
    return config_.batch * data::sample_length(task_.spec(), config_.train_length(), task_.framing());
  }

  // One forward per batch of held-out samples gives every scored target's argmax and NLL: the encoder reads all its
  // output positions at once, and the decoder's teacher-forced argmax equals greedy decoding until its first error,
  // so exact match is greedy decoding's.
  std::vector<LengthResult> evaluate(const std::vector<int64_t>& mult, data::Split split, int64_t tokens,
                                     EvalProgress* progress) override {
    const std::string scores = "task.eval_samples = " + std::to_string(task_.eval_samples()) + " samples";
    const auto sample_tokens = [&](int64_t length) {
      return data::sample_length(task_.spec(), length, task_.framing());
    };
    const auto score_length = [&](std::size_t i, LengthResult& r) {
      Tensor inputs, targets;
      std::vector<uint8_t> scored;
      task_.held_out(split, r.length, inputs, targets, scored);
      if (progress) progress->begin(static_cast<int64_t>(i), r.length, inputs.size(0));
      const bool diagnosed = config_.eval_diagnostics && split == data::Split::test;
      const data::AlgorithmicScore s = score(inputs, targets, scored, progress, diagnosed ? &r.position_loss : nullptr);
      r.tokens = s.tokens;
      r.samples = s.samples;
      r.nll = s.nll / static_cast<double>(s.tokens);
      r.accuracy = static_cast<double>(s.exact) / static_cast<double>(s.samples);
      r.token_accuracy = static_cast<double>(s.correct) / static_cast<double>(s.tokens);
      if (diagnosed) {
        if (progress) progress->measuring_attention();
        r.attention = diagnostics(inputs, scored, std::min(inputs.size(0), kAlgorithmicDiagnosedSamples));
      }
    };
    return evaluate_lengths(mult, tokens, "an algorithmic task", scores, sample_tokens, score_length);
  }

 private:
  const data::Task& task() const override { return task_; }

  data::AlgorithmicScore score(const Tensor& inputs, const Tensor& targets, const std::vector<uint8_t>& scored,
                               EvalProgress* progress, data::PositionLoss* by_position) const {
    NoGradGuard no_grad;
    const int64_t n = inputs.size(0), t = inputs.size(1);
    data::AlgorithmicScore total;
    for (int64_t b = 0; b < n; b += config_.eval_batch) {
      const int64_t e = std::min(n, b + config_.eval_batch);
      const std::vector<uint8_t> part(scored.begin() + b * t, scored.begin() + e * t);
      total += data::score_algorithmic(model_->forward(slice(inputs, 0, b, e)).to(Device::cpu),
                                       slice(targets, 0, b, e), part, by_position);
      if (progress) progress->advance(e - b);
    }
    return total;
  }

  // The attention of the queries whose targets are scored (the blanks, or the answer's positions) over the first
  // `rows` samples.
  AttentionDiagnostics diagnostics(const Tensor& inputs, const std::vector<uint8_t>& scored, int64_t rows) const {
    const int64_t t = inputs.size(1);
    Tensor queries = Tensor::zeros({rows, t}, DType::i64);  // (rows, T): 1 at the scored queries
    std::copy(scored.begin(), scored.begin() + rows * t, queries.mutable_data<int64_t>());
    return query_diagnostics(inputs, queries);
  }

  data::AlgorithmicTask task_;
};

}  // namespace

std::unique_ptr<Workload> make_algorithmic_workload(const RunConfig& config) {
  return std::make_unique<AlgorithmicWorkload>(config);
}

}  // namespace rpb
