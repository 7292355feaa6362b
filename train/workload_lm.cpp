// The 1-D workload: a decoder-only language model on a token stream.
#include <algorithm>

#include "nn/transformer.h"
#include "train/data/batch_sampler.h"
#include "train/data/eval_segments.h"
#include "train/data/task.h"
#include "train/data/task_registry.h"
#include "train/eval_progress.h"
#include "train/data/tokenizer.h"
#include "train/sequence_workload.h"
#include "train/workload.h"

namespace rpb {

namespace {

constexpr uint64_t kSamplerSeedSalt = 0x5eed'ba7c'0000'0001ull;

class LmWorkload final : public SequenceWorkload<data::BatchSampler> {
 public:
  explicit LmWorkload(const RunConfig& c)
      : SequenceWorkload(c, "training stream"), task_(data::make_task(workload_task_options(c))) {
    // The held-out stream must hold the longest evaluation length: known only once the task's data is read (kjv),
    // and checked now rather than after training.
    data::make_eval_plan(static_cast<int64_t>(task_->test_stream().size()), c.length, c.eval_multipliers,
                         c.eval_tokens);
    const bool training = c.task.use == data::DataUse::train;  // an evaluation builds no train or valid stream
    if (c.eval_every > 0 && training)
      data::make_eval_plan(static_cast<int64_t>(task_->valid_stream().size()), c.length, c.valid_multipliers,
                           c.valid_tokens);
    Generator init_gen(c.seed);
    model_ = std::make_unique<nn::LanguageModel>(model_options(c, task_->vocab()), init_gen);
    if (training)
      sampler_ =
          std::make_unique<data::BatchSampler>(task_->train_stream(), c.batch, c.train_length(), c.seed ^ kSamplerSeedSalt);
  }

  std::vector<LengthResult> evaluate(const std::vector<int64_t>& mult, data::Split split, int64_t tokens,
                                     EvalProgress* progress) override {
    const bool valid = split == data::Split::valid;
    const auto& stream = valid ? task_->valid_stream() : task_->test_stream();
    const int64_t held_out = static_cast<int64_t>(stream.size()) - 1;  // its target tokens
    RPB_CHECK(tokens <= held_out, "eval", tokens, " tokens asked for, but the held-out ", valid ? "valid" : "test",
              " stream of ", describe(), " holds ", held_out, " target tokens",
              fixed_split_note());
    const int64_t asked = tokens > 0 ? tokens : valid ? config_.valid_tokens : config_.eval_tokens;
    const auto segments = data::make_eval_segments(stream, config_.length, mult, asked);
    // Sliding windows (run.eval_stride) score the test split; validation stays nonoverlapping.
    const int64_t stride = valid ? 0 : config_.eval_stride;
    const auto windows =
        stride > 0 ? data::make_eval_windows(static_cast<int64_t>(stream.size()), config_.length, mult, asked, stride)
                   : std::vector<data::EvalWindows>{};
    model_->eval();
    std::vector<LengthResult> out;
    const int64_t limit = model_->max_length();  // learned positions end at their table
    int64_t longest = 0;  // the diagnostics' sample: as many target tokens as one segment of the longest length
    for (const data::EvalSegments& seg : segments) longest = std::max(longest, seg.length);
    // Every length scores the same targets: their text bytes are counted once.
    const int64_t bytes = segments.empty() ? 0 : scored_bytes(stream, segments.front().targets.numel());
    for (std::size_t i = 0; i < segments.size(); ++i) {
      LengthResult r;
      r.length = segments[i].length;
      r.multiplier = mult[i];
      if (limit == 0 || r.length <= limit) {
        if (progress) progress->begin(static_cast<int64_t>(i), r.length, segments[i].targets.numel());
        // The per-position loss where the attention diagnostics are measured.
        data::PositionLoss* by_position = config_.eval_diagnostics && !valid ? &r.position_loss : nullptr;
        r.nll = stride > 0 ? sliding_nll(stream, windows[i], progress, by_position)
                           : mean_nll(segments[i], progress, by_position);
        r.tokens = segments[i].targets.numel();
        r.bytes = bytes;
        if (config_.eval_diagnostics && !valid) {
          if (progress) progress->measuring_attention();
          r.attention = diagnostics(segments[i], longest);
        }
      }
      out.push_back(r);
    }
    model_->train();
    return out;
  }

 private:
  const data::Task& task() const override { return *task_; }

  // The text bytes of targets stream[1..n] (what every length scores); 0 for a task without a tokenizer.
  int64_t scored_bytes(const data::TokenStream& stream, int64_t n) const {
    const data::Tokenizer* t = task_->tokenizer();
    if (!t) return 0;
    int64_t bytes = 0;
    for (int64_t i = 1; i <= n; ++i) bytes += static_cast<int64_t>(t->token_bytes(stream[i]).size());
    return bytes;
  }

  // The mean NLL of the segments' targets; each target's NLL at its position added to `by_position` where given.
  double mean_nll(const data::EvalSegments& s, EvalProgress* progress, data::PositionLoss* by_position) const {
    NoGradGuard no_grad;
    const int64_t n = s.inputs.size(0);
    double total = 0;
    for (int64_t b = 0; b < n; b += config_.eval_batch) {
      const int64_t e = std::min(n, b + config_.eval_batch);
      const Tensor in = slice(s.inputs, 0, b, e), tg = slice(s.targets, 0, b, e);
      const Tensor logits = model_->forward(in);
      total += cross_entropy(logits, tg.to(logits.device())).item() * static_cast<double>(e - b);
      if (by_position) by_position->add(logits.to(Device::cpu), tg, data::kUnscoredTarget);
      if (progress) progress->advance(tg.numel());
    }
    return total / static_cast<double>(n);
  }

  // The mean NLL over the windows' scored targets, eval_batch windows per forward. Each batch's mean counts in units
  // of whole windows (its scored targets / L, of N / L in all), so that stride == length sums exactly what mean_nll
  // sums over the same segments.
  double sliding_nll(const data::TokenStream& stream, const data::EvalWindows& w, EvalProgress* progress,
                     data::PositionLoss* by_position) const {
    NoGradGuard no_grad;
    const int64_t n = w.count();
    const double per_window = static_cast<double>(w.length);
    double total = 0;
    for (int64_t b = 0; b < n; b += config_.eval_batch) {
      const int64_t e = std::min(n, b + config_.eval_batch);
      Tensor in, tg;
      data::eval_window_batch(stream, w, b, e, in, tg);
      int64_t scored = 0;
      for (int64_t k = b; k < e; ++k) scored += w.scored(k);
      const Tensor logits = model_->forward(in);
      const double mean = cross_entropy(logits, tg.to(logits.device()), data::kUnscoredTarget).item();
      if (by_position) by_position->add(logits.to(Device::cpu), tg, data::kUnscoredTarget);
      total += mean * (static_cast<double>(scored) / per_window);
      if (progress) progress->advance(scored);
    }
    return total / (static_cast<double>(w.tokens) / per_window);
  }

  // Why a split of the data's own cannot grow (" (the kjv test split is fixed)"); "" for a generated stream.
  std::string fixed_split_note() const {
    const data::TaskInfo& task = data::task_info(config_.task.kind);
    return task.held_out == data::HeldOut::data ? " (the " + std::string(task.name) + " test split is fixed)" : "";
  }

  // One forward over the first segments holding `sample_tokens` target tokens (at least one segment), recorded.
  AttentionDiagnostics diagnostics(const data::EvalSegments& s, int64_t sample_tokens) const {
    NoGradGuard no_grad;
    const int64_t rows = std::clamp<int64_t>(sample_tokens / s.length, 1, s.inputs.size(0));
    nn::AttentionStatsRecorder recorder(model_->attention_layers());
    model_->forward(slice(s.inputs, 0, 0, rows));
    return attention_diagnostics(recorder.layers());
  }

  std::unique_ptr<data::Task> task_;
};

}  // namespace

std::unique_ptr<Workload> make_lm_workload(const RunConfig& config) { return std::make_unique<LmWorkload>(config); }

}  // namespace rpb
