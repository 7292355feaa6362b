// The retrieval workload: a decoder-only language model on passkey samples (train/data/passkey.h), trained on the
// answer's loss and scored by exact-match accuracy per length and depth.
#include <algorithm>
#include <cmath>

#include "nn/transformer.h"
#include "train/data/passkey.h"
#include "train/eval_progress.h"
#include "train/sequence_workload.h"
#include "train/workload.h"

namespace rpb {

namespace {

constexpr uint64_t kPasskeySamplerSalt = 0x5eed'ba7c'0000'0002ull;
// The held-out samples whose attention is diagnosed at every length: the first 100, ten per depth bin.
constexpr int64_t kDiagnosedSamples = 100;

// What one evaluation length's samples add up to.
struct Tally {
  double nll = 0;                // summed over the answer tokens
  std::vector<int64_t> correct;  // per depth bin
};

class PasskeyWorkload final : public SequenceWorkload<data::PasskeySampler> {
 public:
  explicit PasskeyWorkload(const RunConfig& c)
      : SequenceWorkload(c, "training samples"), task_(workload_task_options(c)) {
    // The held-out filler must hold the longest sample: a text's splits are known only once it is read, and are
    // checked now rather than at the first validation or after training.
    check_filler(data::Split::test, c.eval_multipliers, "the longest evaluation length");
    if (c.eval_every > 0 && c.task.use == data::DataUse::train)
      check_filler(data::Split::valid, c.valid_multipliers, "the longest validation length");
    Generator init_gen(c.seed);
    model_ = std::make_unique<nn::LanguageModel>(model_options(c, task_.vocab()), init_gen);
    if (c.task.use == data::DataUse::train)
      sampler_ = std::make_unique<data::PasskeySampler>(task_, c.batch, c.train_length(), c.seed ^ kPasskeySamplerSalt);
  }

  // One teacher-forced forward per sample gives greedy decoding's exact match and the answer's NLL
  // (data::score_passkey; tests/test_passkey.cpp checks it against KV-cache decoding).
  std::vector<LengthResult> evaluate(const std::vector<int64_t>& mult, data::Split split, int64_t tokens,
                                     EvalProgress* progress) override {
    const std::string scores =
        "task.passkey_samples = " + std::to_string(task_.samples_per_depth()) + " samples per tenth of depth";
    const auto length_tokens = [](int64_t length) { return length; };
    const auto score_length = [&](std::size_t i, LengthResult& r) {
      Tensor inputs, targets;
      task_.held_out(split, r.length, inputs, targets);
      const int64_t n = inputs.size(0), k = task_.digits();
      if (progress) progress->begin(static_cast<int64_t>(i), r.length, n * k);
      const Tally t = score(inputs, targets, progress);
      int64_t correct = 0;
      for (const int64_t c : t.correct) correct += c;
      r.tokens = n * k;
      r.nll = t.nll / static_cast<double>(r.tokens);
      r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
      r.samples_per_depth = task_.samples_per_depth();
      for (const int64_t c : t.correct)
        r.depth_accuracy.push_back(static_cast<double>(c) / static_cast<double>(r.samples_per_depth));
      if (config_.eval_diagnostics && split == data::Split::test) {
        if (progress) progress->measuring_attention();
        r.attention = diagnostics(inputs, std::min(n, kDiagnosedSamples));
      }
    };
    return evaluate_lengths(mult, tokens, "passkey retrieval", scores, length_tokens, score_length);
  }

 private:
  const data::Task& task() const override { return task_; }

  void check_filler(data::Split split, const std::vector<int64_t>& multipliers, const std::string& what) const {
    if (multipliers.empty()) return;
    const int64_t largest = *std::max_element(multipliers.begin(), multipliers.end());
    task_.check_filler(split, largest * config_.length, what + " " + std::to_string(largest) + " x run.length " +
                                                            std::to_string(config_.length));
  }

  // The answer's NLL and the exact matches per depth bin (sample s in bin s % kPasskeyDepthBins) of the samples.
  Tally score(const Tensor& inputs, const Tensor& targets, EvalProgress* progress) const {
    NoGradGuard no_grad;
    const int64_t n = inputs.size(0), k = task_.digits();
    Tally t;
    t.correct.assign(data::kPasskeyDepthBins, 0);
    for (int64_t b = 0; b < n; b += config_.eval_batch) {
      const int64_t e = std::min(n, b + config_.eval_batch);
      const data::PasskeyScore s =
          data::score_passkey(model_->forward(slice(inputs, 0, b, e)).to(Device::cpu), slice(targets, 0, b, e), k);
      t.nll += s.nll;
      for (int64_t row = b; row < e; ++row)
        if (s.exact[static_cast<std::size_t>(row - b)])
          ++t.correct[static_cast<std::size_t>(row % data::kPasskeyDepthBins)];
      if (progress) progress->advance((e - b) * k);
    }
    return t;
  }

  // The attention of the answer's queries (the K inputs [L - K, L) that predict the digits) in recorded forwards over
  // the first `rows` samples, run.eval_batch at a time: how far back the positions that must read the key attend.
  AttentionDiagnostics diagnostics(const Tensor& inputs, int64_t rows) const {
    const int64_t L = inputs.size(1), k = task_.digits(), first = data::PasskeyLayout{L, k}.query();
    Tensor answer = Tensor::zeros({rows, L}, DType::i64);  // (rows, L): 1 at the answer's queries
    for (int64_t row = 0; row < rows; ++row)
      std::fill_n(answer.mutable_data<int64_t>() + row * L + first, k, int64_t{1});
    return query_diagnostics(inputs, answer);
  }

  data::PasskeyTask task_;
};

}  // namespace

std::unique_ptr<Workload> make_passkey_workload(const RunConfig& config) {
  return std::make_unique<PasskeyWorkload>(config);
}

}  // namespace rpb
