// rpb/train/data/passkey.h: the passkey-retrieval task (Mohtashami and Jaggi 2023): filler with a key hidden at a
// uniform depth, and at the end a query the model must answer with the key.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/data/batch_sampler.h"
#include "train/data/task.h"

namespace rpb::data {

/// The depth bins of the key in held-out samples: tenths of the context.
inline constexpr int64_t kPasskeyDepthBins = 10;

/// The ids a passkey task adds after its filler's, as offsets past the filler's vocabulary: the digits 0..9 (offset d),
/// the key marker and the query marker.
inline constexpr int64_t kPasskeyKeyMarker = 10;
inline constexpr int64_t kPasskeyQueryMarker = 11;
inline constexpr int64_t kPasskeyExtraTokens = 12;

/// The shortest sample length (run.length) a passkey task of `digits` digits takes: every depth bin (tenths of the
/// context) must hold at least one place for the key.
int64_t passkey_min_length(int64_t digits);

/// Where the parts of one passkey sample of length L (its inputs; the sample holds L + 1 tokens, the last one only a
/// target) lie, for K digits:
///   positions [0, L - K):        the context: L - 2K - 1 filler tokens with the key block (the key marker, then the
///                                K digits) inserted at `key_start` p in [0, P), P = L - 2K places;
///   position L - K:              the query marker;
///   positions [L - K + 1, L]:    the K digits again, the answer.
/// The targets of a sample are its tokens shifted by one; only the K targets at inputs [L - K, L) (the answer's
/// digits, the first predicted from the query marker) are scored, every other target is kUnscoredTarget.
/// The key's depth is p / P; depth bin b (of kPasskeyDepthBins) holds the places with floor(10 p / P) == b.
struct PasskeyLayout {
  int64_t length = 0;  // L
  int64_t digits = 0;  // K
  int64_t places() const { return length - 2 * digits; }          // P
  int64_t filler() const { return length - 2 * digits - 1; }      // filler tokens
  /// The query marker's position, which is also the input index of the first scored target (the first digit is
  /// predicted from the query marker).
  int64_t query() const { return length - digits; }
  /// The places of depth bin `bin`: [lo, hi).
  std::pair<int64_t, int64_t> bin_places(int64_t bin) const;
  /// The depth bin of place p.
  int64_t bin_of(int64_t place) const;
};

/// Passkey retrieval. Vocabulary: the filler's ids, then the digits 0..9, the key marker and the query marker. The
/// filler is the registry row's (train/data/task_registry.h): an order-task.order Markov chain over task.vocab ids
/// (passkey: MarkovTask), or one's own text (a row that reads text, passkey_text: TextTask over task.path, its ids its
/// tokenizer's); the filler task's train, valid and test streams fill the training, validation and test samples. A
/// sample draws, in this order from its generator: the filler's offset in the split's stream (uniform), the key's
/// place (uniform over the places, or over one depth bin's), and the K digits (uniform). Its answer has K ln 10 nats
/// of entropy without the key and none given it: a model that reads the key exactly answers every sample (accuracy 1,
/// the answer's NLL 0), so entropy_rate() (of the scored tokens) is 0.
class PasskeyTask final : public Task {
 public:
  explicit PasskeyTask(const TaskOptions& options);
  int64_t vocab() const override { return filler_vocab_ + kPasskeyExtraTokens; }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return 0.0; }
  /// Filler ids as the filler task decodes them (Markov ids as numbers, text as text), the digits as 0-9, the
  /// markers as passkey_marker_text's.
  std::string decode(const std::vector<int32_t>& tokens) const override;
  /// The filler task: its text and tokenizer are the data a checkpoint records.
  const Task& data_source() const override { return *filler_; }

  int64_t digits() const { return digits_; }
  /// The ids of the filler: the Markov chain's task.vocab, or the text's tokenizer's.
  int64_t filler_vocab() const { return filler_vocab_; }
  /// The filler of training samples: the filler task's train stream.
  const TokenStream& filler_stream() const { return filler_->train_stream(); }
  /// The filler of `split`'s held-out samples: the filler task's valid or test stream.
  const TokenStream& filler_stream(Split split) const;
  int64_t samples_per_depth() const { return samples_; }
  int32_t digit_token(int64_t d) const { return static_cast<int32_t>(filler_vocab_ + d); }
  int32_t key_marker() const { return static_cast<int32_t>(filler_vocab_ + kPasskeyKeyMarker); }
  int32_t query_marker() const { return static_cast<int32_t>(filler_vocab_ + kPasskeyQueryMarker); }

  /// Checks that the filler of `split` holds a sample of `length` (its filler() tokens), before any is drawn: an
  /// rpb::Error names the split, its tokens, the length and `what` asks for it ("the longest evaluation length 16 x
  /// run.length 64"), and what sizes the stream (task.eval_tokens, or the corpus and its fractions).
  void check_filler(Split split, int64_t length, const std::string& what) const;

  /// One sample of `length` + 1 tokens into `out` (PasskeyLayout), its filler from `filler`; `bin` < 0 draws the
  /// key's place over the whole context, else over depth bin `bin`. Returns the key's place.
  int64_t sample(const TokenStream& filler, int64_t length, int64_t bin, Generator& gen, int64_t* out) const;

  /// The held-out samples of `split` at `length`: kPasskeyDepthBins x samples_per_depth() samples, sample k in depth
  /// bin k % kPasskeyDepthBins, drawn from generators that depend on task.seed, the split, the length and the bin
  /// alone (every call, run and method scores the same samples). inputs (N, length) and targets (N, length) i64, the
  /// unscored targets kUnscoredTarget.
  void held_out(Split split, int64_t length, Tensor& inputs, Tensor& targets) const;

 private:
  // What sizes the filler's streams, for messages: "task.train_tokens or task.eval_tokens", or the corpus's.
  std::string filler_sizes() const;

  std::unique_ptr<Task> filler_;
  bool text_filler_ = false;  // the filler is one's own text (its splits sized by the corpus)
  int64_t filler_vocab_ = 0, digits_ = 0, samples_ = 0;
  uint64_t seed_ = 0;
  DataUse use_ = DataUse::train;  // which filler streams are built (builds_split)
};

/// The text of passkey id `filler_vocab + i` for i in {kPasskeyKeyMarker, kPasskeyQueryMarker}: "<key>" and
/// "<query>" (the digits are their own characters). A passkey_text prompt (`rpb generate`) writes the markers so,
/// followed by the digits.
const char* passkey_marker_text(int64_t i);

/// What a model's logits on passkey samples score: greedy decoding's exact matches and the answer's NLL.
struct PasskeyScore {
  double nll = 0;           // -log softmax(logits)[target] summed over every sample's K answer targets, in float64
  std::vector<bool> exact;  // per sample: the first largest logit is the target at each of its K answer targets
};

/// Scores logits (N, L, V) f32 of samples' inputs against their targets (N, L) i64 (held_out's, PasskeyLayout): only
/// the last `digits` positions of each sample count. Greedy decoding reproduces a sample's answer exactly iff it is
/// exact here: with the true prefix at each answer position the decoded prefix is, by induction, the true one.
PasskeyScore score_passkey(const Tensor& logits, const Tensor& targets, int64_t digits);

/// Training batches of passkey samples at one length, the key's place uniform over the context.
class PasskeySampler {
 public:
  PasskeySampler(const PasskeyTask& task, int64_t batch, int64_t length, uint64_t seed);
  /// inputs (B, L) and targets (B, L) i64, row 0 drawn first. Fresh tensors each call.
  void next(Tensor& inputs, Tensor& targets);
  BatchSampler::State state() const { return {rng_.state(), batches_drawn_}; }
  void set_state(const BatchSampler::State& s);

 private:
  const PasskeyTask* task_;
  int64_t batch_, length_;
  Generator rng_;
  int64_t batches_drawn_ = 0;
};

/// `rows` samples of `length` + 1 tokens each, row after row in `tokens` -> the model's inputs (rows, length) and
/// targets (rows, length) i64: the tokens shifted by one, every target before the answer kUnscoredTarget.
void passkey_inputs_targets(const std::vector<int64_t>& tokens, int64_t rows, int64_t length, int64_t digits,
                            Tensor& inputs, Tensor& targets);

}  // namespace rpb::data
