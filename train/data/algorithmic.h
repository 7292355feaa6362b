// rpb/train/data/algorithmic.h: the algorithmic tasks of the length-generalization literature, generated on the fly
// from a seed, and the two framings that literature gives them to a model.
//
// A task is a spec (AlgorithmicSpec) and a registry row each (train/data/task_registry.cpp makes one row per spec of
// algorithmic_specs()). The specs, with their references, are in train/data/algorithmic_regular.cpp (Delétang et al.'s
// regular tasks), algorithmic_context_free.cpp, algorithmic_context_sensitive.cpp and algorithmic_decoder.cpp (the
// decoder-only papers' copy and addition, Zoology's multi-query associative recall, flip-flop language modelling).
//
// Length. Every task has one length L: the input's length for Delétang et al.'s tasks (google-deepmind/
// neural_networks_chomsky_hierarchy, whose `sample_batch(rng, batch_size, length)` takes it), the tokens to copy, the
// digits of the longer operand, the key-value pairs, the instructions. Training draws L uniformly from
// [task.min_length, run.length] for each batch (their UniformCurriculum: one L per batch); an evaluation scores
// task.eval_samples held-out samples at each L = multiplier x run.length.
//
// The two framings (model.causal picks one; a spec says which it runs in):
//   - encoder (model.causal = false; Delétang et al. 2023, Ruoss et al. 2023): the input, then one blank token per
//     output position, read all at once by bidirectional attention; the targets sit at the blanks
//     (experiments/utils.py make_model_with_empty_targets). The loss covers every output position, the padding after a
//     termination token included, as their loss does; accuracy and exact match count the output positions up to and
//     including the first termination token (their accuracy mask; every position for tasks without one).
//   - decoder (model.causal = true; Kazemnejad et al. 2023, McGill-NLP/length-generalization): the input, a separator,
//     then the answer (the scored output positions) and an end token, predicted token by token; the loss and the
//     scores are the answer's and the end token's (the prompt is masked, decoder_only_mask_inputs). A sample shorter
//     than its batch's longest is padded at its end with end tokens whose targets are unscored: a causal model's
//     earlier positions never read them. Tasks that are sequences of their own (mqar, flip_flop) give their tokens
//     and scored targets directly, in the decoder framing only.
// Scores, in both framings: per-token accuracy (the scored targets whose largest logit is the target, pooled over the
// samples: Delétang et al.'s accuracy_fn), and exact match (the samples whose scored targets are all right: greedy
// decoding reproduces the answer exactly, the decoder papers' metric; with teacher forcing a wrong token ends the
// match, so the two agree).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/data/batch_sampler.h"
#include "train/data/position_loss.h"
#include "train/data/task.h"
#include "train/data/task_options.h"

namespace rpb::data {

/// How an algorithmic task's samples are given to the model (see the file comment).
enum class Framing { encoder, decoder };

/// "encoder", "decoder".
const char* framing_name(Framing framing);

/// The framing of a model: causal attention reads the decoder framing, bidirectional the encoder's.
inline Framing framing_of(bool causal) { return causal ? Framing::decoder : Framing::encoder; }

/// One instance of an input -> output task (every task but mqar and flip_flop): ids of the task's alphabet.
struct AlgorithmicInstance {
  std::vector<int32_t> input;   // the input, of the length the spec's input_length gives
  std::vector<int32_t> output;  // output_length(L) positions: the answer, then any termination token and padding
  int64_t scored = 0;           // the answer: output positions [0, scored) count for accuracy (all in the loss)
};

/// One sample as the model reads it: inputs and targets of one length T, targets kUnscoredTarget where the loss reads
/// nothing.
struct AlgorithmicSample {
  std::vector<int32_t> inputs;   // (T) token ids
  std::vector<int32_t> targets;  // (T) the target at each position, or kUnscoredTarget
  std::vector<uint8_t> scored;   // (T) 1 where the target counts for accuracy and exact match (a target of the loss)
};

/// An algorithmic task's spec: its registry row's algorithmic part.
struct AlgorithmicSpec {
  const char* name;       // task.kind
  const char* summary;    // one line for help texts
  const char* reference;  // where the generator follows, with the commit
  bool encoder;           // it runs in the encoder framing (model.causal = false)
  bool decoder;           // it runs in the decoder framing (model.causal = true)
  Framing literature;     // the framing its paper trained it in
  int64_t min_length;     // the smallest L it takes (task.min_length's floor)
  /// The size of the alphabet when task.alphabet leaves it to the task (0), which its reference uses; 0 for a fixed
  /// alphabet (token_names alone).
  int64_t default_alphabet = 0;
  /// The names of its alphabet's ids, for decode(); `alphabet` is task.alphabet resolved (0 for a fixed alphabet).
  std::vector<std::string> (*token_names)(int64_t alphabet);
  /// Input -> output tasks: the instance at length L from `gen`; null for the sequence tasks.
  void (*instance)(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicInstance& out) = nullptr;
  /// Input -> output tasks: the output positions at length L (the encoder's blanks).
  int64_t (*output_length)(int64_t length) = nullptr;
  /// Sequence tasks (decoder framing only): the sample at length L, its targets and scored positions set; null for
  /// the input -> output tasks.
  void (*sequence)(int64_t length, int64_t alphabet, Generator& gen, AlgorithmicSample& out) = nullptr;
  /// Sequence tasks: the sample's length T at L (the same for every sample of that L).
  int64_t (*sequence_length)(int64_t length) = nullptr;
  /// The largest L it takes with `alphabet` (mqar: keys distinct within a sample), or 0 for none.
  int64_t (*max_length)(int64_t alphabet) = nullptr;
  /// Input -> output tasks whose input at L is longer than L (addition: two numbers and '+'): its longest input;
  /// null when it is L at most.
  int64_t (*input_length)(int64_t length) = nullptr;
};

/// Every spec, in the registry's order.
const std::vector<AlgorithmicSpec>& algorithmic_specs();
/// The spec of task `kind`, or null for a task that is not algorithmic.
const AlgorithmicSpec* find_algorithmic(const std::string& kind);

/// The ids a framing adds after the alphabet's: the encoder's blank, the decoder's separator and end token. Every
/// framing's vocabulary holds all three, so a task's vocabulary is the same in both.
inline constexpr int64_t kBlankOffset = 0;
inline constexpr int64_t kSeparatorOffset = 1;
inline constexpr int64_t kEndOffset = 2;
inline constexpr int64_t kFramingTokens = 3;

/// A task's alphabet size: task.alphabet, or the spec's default_alphabet when that is 0; the token_names' count for a
/// fixed alphabet.
int64_t alphabet_size(const AlgorithmicSpec& spec, const TaskOptions& options);

/// The longest sample (T) of length L in `framing`: the tape the model reads (encoder: input and output positions;
/// decoder: input, separator, answer and end token, less the last token, which is only a target).
int64_t sample_length(const AlgorithmicSpec& spec, int64_t length, Framing framing);

/// Lays `instance` out in `framing` (ids past `alphabet` for the framing's tokens) into `out`.
void frame(const AlgorithmicInstance& instance, int64_t alphabet, Framing framing, AlgorithmicSample& out);

/// A batch: `rows` samples padded to the longest (decoder: end tokens, unscored) -> inputs (rows, T) and targets
/// (rows, T) i64, scored (rows, T) u8 as a vector, row after row.
void stack_samples(const std::vector<AlgorithmicSample>& samples, int64_t end_token, Tensor& inputs, Tensor& targets,
                   std::vector<uint8_t>* scored);

/// An algorithmic task: its spec, framing and alphabet, and held-out samples drawn from task.seed. It has no token
/// streams (train, valid and test are empty): every length draws its samples (HeldOut::instances).
class AlgorithmicTask final : public Task {
 public:
  /// In the framing options.causal picks (framing_of). Throws rpb::Error naming task.kind for a task that is not
  /// algorithmic, and the framing when the spec does not run in it.
  explicit AlgorithmicTask(const TaskOptions& options);
  const AlgorithmicSpec& spec() const { return *spec_; }
  Framing framing() const { return framing_; }
  int64_t alphabet() const { return alphabet_; }
  int64_t vocab() const override { return alphabet_ + kFramingTokens; }
  int32_t token(int64_t offset) const { return static_cast<int32_t>(alphabet_ + offset); }
  std::string describe() const override;
  /// Every scored target is a function of the input: a model that computes it reaches accuracy 1 and NLL 0.
  std::optional<double> entropy_rate() const override { return 0.0; }
  /// The alphabet's names; the framing tokens as <blank>, <sep>, <end>.
  std::string decode(const std::vector<int32_t>& tokens) const override;
  /// One sample of length L from `gen`, framed.
  void sample(int64_t length, Generator& gen, AlgorithmicSample& out) const;
  /// The held-out samples of `split` at L: task.eval_samples of them, from a generator that depends on task.seed,
  /// the split and L alone (every call, run and method scores the same samples).
  void held_out(Split split, int64_t length, Tensor& inputs, Tensor& targets, std::vector<uint8_t>& scored) const;
  int64_t eval_samples() const { return eval_samples_; }
  int64_t min_length() const { return min_length_; }

 private:
  const AlgorithmicSpec* spec_;
  Framing framing_;
  int64_t alphabet_, eval_samples_, min_length_;
  uint64_t seed_;
};

/// Training batches of an algorithmic task: each draws L uniformly from [task.min_length, max_length] and `batch`
/// samples of it, from one generator whose state checkpoints keep.
class AlgorithmicSampler {
 public:
  AlgorithmicSampler(const AlgorithmicTask& task, int64_t batch, int64_t max_length, uint64_t seed);
  /// inputs (B, T) and targets (B, T) i64 of the batch's L, row 0 drawn first. Fresh tensors each call.
  void next(Tensor& inputs, Tensor& targets);
  BatchSampler::State state() const { return {rng_.state(), batches_drawn_}; }
  void set_state(const BatchSampler::State& s);

 private:
  const AlgorithmicTask* task_;
  int64_t batch_, max_length_;
  Generator rng_;
  int64_t batches_drawn_ = 0;
};

/// What a model's logits score on algorithmic samples.
struct AlgorithmicScore {
  double nll = 0;        // -log softmax(logits)[target] summed over the scored targets, in float64
  int64_t correct = 0;   // scored targets whose first largest logit is the target
  int64_t tokens = 0;    // scored targets
  int64_t exact = 0;     // samples whose scored targets are all right
  int64_t samples = 0;
  AlgorithmicScore& operator+=(const AlgorithmicScore& o);
};

/// Scores logits (B, T, V) (f32, on the CPU) against targets (B, T) i64 at the `scored` positions (B * T
/// of them, row after row); adds each scored target's NLL at its position to `by_position` where given.
AlgorithmicScore score_algorithmic(const Tensor& logits, const Tensor& targets, const std::vector<uint8_t>& scored,
                                   PositionLoss* by_position = nullptr);

}  // namespace rpb::data
