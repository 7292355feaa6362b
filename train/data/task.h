// rpb/train/data/task.h: token sources (synthetic Markov and lag tasks, character-level KJV),
// training batches and the evaluation segments that score the same tokens at every length.
//
// Everything here is deterministic: a TaskOptions value fixes every stream bit for bit, and a
// BatchSampler's State fixes every batch it will draw.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/data/token_stream.h"

namespace rpb::data {

class Tokenizer;
struct TokenizerRecord;

/// An independent seed for stream `id` of a source seeded with `seed` (splitmix64 finalizer).
inline uint64_t derive_seed(uint64_t seed, uint64_t id) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (id + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A held-out split: valid (scored during training, run.eval_every) or test (scored by evaluations).
enum class Split { valid, test };

/// What a command builds of a task's data (TaskOptions::use), and so what the memory estimate counts.
enum class DataUse {
  train,     // the train, valid and test splits
  evaluate,  // the test split
  generate   // only what gives the vocabulary (a text), no stream
};

/// What `make_task` builds ([task] in a run config).
struct TaskOptions {
  std::string kind = "markov";  // a registered task's name (task_names(); its row: find_task in task_registry.h)
  int64_t vocab = 16;           // markov, lag: number of token ids (kjv: set by the text)
  int64_t order = 2;            // markov: k-gram context
  double concentration = 0.5;   // markov: Dirichlet concentration of each row's next-token distribution (smaller: lower entropy)
  int64_t lag = 8;              // lag: the token `lag` positions back is copied
  double noise = 0.1;           // lag: probability of a fresh uniform token instead of the copy
  uint64_t seed = 0;            // the source's own parameters (the Markov table) and its streams
  int64_t train_tokens = 1 << 20;  // markov, lag: length of the train stream (kjv: the whole train split)
  int64_t eval_tokens = 1 << 16;   // markov, lag: length of the valid and test streams (kjv: whole splits)
  int64_t passkey_digits = 5;       // passkey: K, the key's digits
  int64_t passkey_samples = 100;    // passkey: held-out samples per tenth of depth at every evaluation length
  std::string kjv_path = "";       // kjv: cached text file; empty = checkpoints/data/kjv.txt (relative to the working dir)
  /// kjv: write the text to kjv_path when it is missing. Not a config key: `rpb eval` turns it off, as reading
  /// a checkpoint must not write files.
  bool generate_missing = true;
  std::string path = "";             // text: a UTF-8 file, or a folder of them (task.path)
  /// text: what messages call `path`: "task.path", or what the user gave instead ("eval --data"). Not a config key.
  std::string path_key = "task.path";
  std::string documents = "files";   // text: each file one document, or "blank_lines": each paragraph (task.documents)
  double valid_fraction = 0.05;      // text: the share of documents in valid and test, by content (split_of_document)
  double test_fraction = 0.05;
  std::string tokenizer = "bytes";   // text: a registered tokenizer (train/data/tokenizer.h; task.tokenizer)
  std::string sentencepiece_model = "unigram";  // text with sentencepiece: "unigram" or "bpe"; its size is task.vocab
  int64_t sentencepiece_sentences = 200000;     // text with sentencepiece: the most train lines it samples
  /// text: the tokenizer to use instead of building one from the corpus (a checkpoint's, for rpb eval). Not a config
  /// key.
  std::shared_ptr<const TokenizerRecord> stored_tokenizer;
  /// text: the folder of the token cache (train/data/token_cache.h) when a run trains: <run.out_dir>/.token_cache,
  /// or a sweep's <out_dir>/<name>/.token_cache for all its runs (run_config); "": none (the ids in memory). Not a
  /// config key.
  std::string token_cache;
  /// text: the seconds between the log lines of a pass over the corpus that lasts (train/data/corpus.h). Not a config
  /// key.
  double progress_every_s = 10;
  /// markov, lag: the train and valid streams are built for DataUse::train only (the test stream always is). Not a
  /// config key: `rpb eval` reads only the test split (DataUse::evaluate), so a large task.train_tokens costs it
  /// nothing; a stream not built is empty, and describe() still names its configured size. kjv builds every split
  /// (its text is bounded).
  DataUse use = DataUse::train;
};

/// A source of token streams. Train, valid and test are independent (synthetic tasks: separate
/// runs of the source from generators derived from the seed; kjv: disjoint books).
class Task {
 public:
  virtual ~Task() = default;
  /// Number of token ids; every stream holds values in [0, vocab()).
  virtual int64_t vocab() const = 0;
  /// One line naming the task, its parameters, its split rule and its stream sizes.
  virtual std::string describe() const = 0;
  /// Nats per token: the best cross-entropy any model can reach on the stationary source;
  /// nullopt when unknown (kjv).
  virtual std::optional<double> entropy_rate() const = 0;
  /// exp(entropy_rate()): the best achievable perplexity.
  std::optional<double> optimal_perplexity() const;
  const TokenStream& train_stream() const { return train_; }
  const TokenStream& valid_stream() const { return valid_; }
  const TokenStream& test_stream() const { return test_; }
  /// Tokens as text for display: characters for kjv, space-separated ids otherwise.
  virtual std::string decode(const std::vector<int32_t>& tokens) const;
  /// The tokenizer of a text task (its tokens' bytes give bits per byte); null for the others.
  virtual const Tokenizer* tokenizer() const { return nullptr; }
  /// The task whose data this one's tokens come from, and whose text and tokenizer a checkpoint records
  /// (train/checkpoint/data_identity.h): the task itself, or a passkey task's filler.
  virtual const Task& data_source() const { return *this; }

 protected:
  TokenStream train_, valid_, test_;
};

/// Whether a task builds the stream of `split` (0 train, 1 valid, 2 test, as DocumentVisitor numbers them) for
/// `use`: training builds all three, an evaluation (or a generation) the test split alone.
bool builds_split(DataUse use, int split);

/// A split's stream for a task's description: "1234 tokens", or "not built" where builds_split says it is not (an
/// evaluation's train and valid streams are empty: not 0 tokens of the data).
std::string stream_size_text(const TokenStream& stream, DataUse use, int split);

/// The dims of a task's positions (its registry row's): 2 for a grid task (cells of a grid), 1 for the token tasks and
/// for an unknown kind.
int64_t task_dims(const std::string& kind);

/// Builds the token task `options.kind` names, through its registry row. Unknown kinds, the grid task (which the grid
/// workload builds) and out-of-range values throw rpb::Error naming the option and the value ("task.order must be >= 1,
/// got 0").
std::unique_ptr<Task> make_task(const TaskOptions& options);

/// A random order-k Markov chain over `vocab` tokens. Each of the vocab^k contexts (k-gram
/// states) has a next-token distribution drawn from a symmetric Dirichlet(concentration), so
/// the chain is almost surely ergodic; its entropy rate is exact:
/// H = sum_s pi(s) H(row s), pi the stationary distribution over k-gram states.
/// Each stream starts from a state drawn from pi (so its first k tokens are that state).
class MarkovTask final : public Task {
 public:
  explicit MarkovTask(const TaskOptions& options);
  /// Test hook: a chain with a given table, row-major (vocab^order rows of vocab
  /// probabilities, each summing to 1); options.concentration is not used.
  MarkovTask(const TaskOptions& options, std::vector<double> table);

  int64_t vocab() const override { return vocab_; }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return entropy_; }

  int64_t order() const { return order_; }
  /// vocab^order.
  int64_t num_states() const { return states_; }
  /// Row s holds p(next token | state s); state of tokens (x_1..x_k), oldest first,
  /// is sum_i x_i vocab^(k-i).
  const std::vector<double>& table() const { return table_; }
  /// Stationary distribution over states (sums to 1; pi P = pi to ~1e-14).
  const std::vector<double>& stationary() const { return pi_; }
  /// The state after `state` emits `token`.
  int64_t next_state(int64_t state, int32_t token) const { return (state * vocab_ + token) % states_; }

 private:
  void validate(const TaskOptions& options);  // checks the options, sets vocab_, order_, states_
  void finish(const TaskOptions& options);    // from table_: stationary distribution, entropy, streams

  TaskOptions opt_;
  int64_t vocab_ = 0, order_ = 0, states_ = 0;
  std::vector<double> table_, pi_;
  double entropy_ = 0;
};

/// x_t = x_{t-lag} with probability 1-noise, else a uniform token (the first `lag` tokens are
/// uniform). Entropy rate per token after the first `lag`, with q = 1-noise+noise/V:
/// H = -q log q - (V-1)(noise/V) log(noise/V). A relative-offset task: the model must find the
/// token `lag` positions back wherever it stands.
class LagTask final : public Task {
 public:
  explicit LagTask(const TaskOptions& options);
  int64_t vocab() const override { return opt_.vocab; }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return entropy_; }

 private:
  TaskOptions opt_;
  double entropy_ = 0;
};

/// The kjv text a task with `kjv_path` (TaskOptions::kjv_path) reads: the path, or checkpoints/data/kjv.txt when it
/// is empty.
std::string kjv_text_path(const std::string& kjv_path);

/// The largest kjv text rpb reads (the KJV is 4.3 MB); the memory estimate's data part for kjv holds one this large.
inline constexpr std::size_t kMaxKjvTextBytes = std::size_t{12} << 20;

/// Character-level King James Bible. The cached text (TaskOptions::kjv_path) holds one verse per
/// line without its reference, books separated by one empty line; when missing it is produced
/// with `bible` (Debian package bible-kjv, text in bible-kjv-text) and written atomically.
/// Split by book, no overlap: book index b (0 = Genesis .. 65 = Revelation) goes to valid when
/// b % 10 == 4, to test when b % 10 == 9, to train otherwise. A split's stream is its books'
/// verses in canonical order, each followed by '\n'. Vocabulary: the distinct bytes of the
/// whole text (verses and '\n'), sorted, id = rank.
/// The text is read through train/io/input_file.h (a regular file of at most kMaxKjvTextBytes; a FIFO or a device is
/// refused by name).
class KjvTask final : public Task {
 public:
  explicit KjvTask(const TaskOptions& options);
  int64_t vocab() const override { return static_cast<int64_t>(chars_.size()); }
  std::string describe() const override;
  std::optional<double> entropy_rate() const override { return std::nullopt; }
  std::string decode(const std::vector<int32_t>& tokens) const override;
  /// Text to ids; a character outside the vocabulary is an error naming it.
  std::vector<int32_t> encode(const std::string& text) const;

  /// The sorted characters; id i is chars()[i].
  const std::string& chars() const { return chars_; }
  /// 0 train, 1 valid, 2 test, for every book in canonical order.
  const std::vector<int>& book_splits() const { return book_split_; }
  /// Where the cached text lives.
  const std::string& path() const { return path_; }
  /// The SHA-256 (64 hex digits) of the text as the splits read it: the books' verses, each followed by '\n', one
  /// empty line between books. For a text rpb wrote (generate_kjv_text) it is the file's own digest (sha256sum); a
  /// checkpoint records it to tell its training text from another (train/checkpoint/data_identity.h).
  const std::string& text_sha256() const { return text_sha256_; }
  /// The split of book index b under the rule above.
  static int split_of_book(int64_t b) { return b % 10 == 4 ? 1 : b % 10 == 9 ? 2 : 0; }

 private:
  std::string path_, chars_, text_sha256_;
  std::vector<int> book_split_;
  int32_t id_of_[256];
};

/// Produces the cached KJV text at `path` (one verse per line, books separated by an empty line)
/// by running `bible`; writes to a temporary file and renames it into place. Throws when the
/// program is missing (naming the Debian package) or its output cannot be parsed.
void generate_kjv_text(const std::string& path);

/// A Gamma(shape, 1) sample in log space (Marsaglia-Tsang; for shape < 1 the boost
/// G(a) = G(a+1) U^(1/a) is applied as a log, so tiny shapes do not underflow to log 0).
double sample_log_gamma(double shape, Generator& gen);
/// A symmetric Dirichlet(concentration) sample of `k` components (normalized Gamma draws).
std::vector<double> sample_dirichlet(int64_t k, double concentration, Generator& gen);
/// A uniform integer in [0, n) without modulo bias (n >= 1).
uint64_t uniform_index(Generator& gen, uint64_t n);

/// Random training windows from one stream. The stream must outlive the sampler.
class BatchSampler {
 public:
  /// Needs stream.size() >= length + 1.
  BatchSampler(const TokenStream& stream, int64_t batch, int64_t length, uint64_t seed);
  BatchSampler(TokenStream&&, int64_t, int64_t, uint64_t) = delete;  // would dangle

  /// inputs (B, L) and targets (B, L) i64 (targets = inputs shifted by one), windows at uniform
  /// random offsets in [0, stream.size() - L - 1] drawn from the sampler's generator (one draw
  /// per row, row 0 first). Fresh tensors each call.
  void next(Tensor& inputs, Tensor& targets);

  struct State {
    Generator::State rng;
    int64_t batches_drawn = 0;
  };
  /// Saved in checkpoints; set_state() of it reproduces exactly the batches that followed.
  State state() const { return {rng_.state(), batches_drawn_}; }
  void set_state(const State& s);

  int64_t batch() const { return batch_; }
  int64_t length() const { return length_; }

 private:
  const TokenStream* stream_;
  int64_t batch_, length_;
  Generator rng_;
  int64_t batches_drawn_ = 0;
};

/// The lengths an evaluation runs and the number of target tokens each scores.
struct EvalPlan {
  int64_t train_length;
  std::vector<int64_t> lengths;  // multiplier * train_length, in the order of the multipliers
  int64_t tokens_scored;         // N: the same at every length
};

/// Validates and plans: every multiplier >= 1 and dividing the largest one; N = the largest
/// multiple of the largest length that fits in min(max_tokens, stream_tokens - 1); N == 0 (the
/// held-out stream or max_tokens shorter than the largest length + 1) is an error naming the values.
EvalPlan make_eval_plan(int64_t stream_tokens, int64_t train_length, const std::vector<int64_t>& multipliers,
                        int64_t max_tokens);

/// The segments of one evaluation length.
struct EvalSegments {
  int64_t length;
  Tensor inputs;   // (num_segments, length) i64
  Tensor targets;  // (num_segments, length) i64: inputs shifted by one
};

/// For each length l = m * train_length (in the order of `multipliers`) the first N + 1 tokens
/// of `stream` cut into N / l non-overlapping segments: segment s has inputs
/// stream[s*l .. s*l+l-1] and targets stream[s*l+1 .. s*l+l]. Every length scores exactly the
/// same N target tokens (stream[1..N]), each exactly once. See make_eval_plan for the checks.
std::vector<EvalSegments> make_eval_segments(const TokenStream& stream, int64_t train_length,
                                             const std::vector<int64_t>& multipliers, int64_t max_tokens);

/// The target a sliding window does not score (cross_entropy's ignore_index, core/ops.h).
inline constexpr int64_t kUnscoredTarget = -100;

/// The sliding windows of one evaluation length (run.eval_stride, the ALiBi paper's second protocol). Windows of
/// `length` tokens advance by `stride` over the same N target tokens the nonoverlapping segments score
/// (stream[1..N]): window k ends at target index e_k = min(length + k * stride, N) (exclusive, targets counted from
/// stream[1]), starts at e_k - length, and scores its targets from e_{k-1} on (e_{-1} = 0): the first window all
/// `length`, every later one its last `stride` (the last window fewer, when stride does not divide N - length). So
/// every target is scored once, with at least length - stride tokens of context; stride == length gives the
/// nonoverlapping segments, window k being segment k.
struct EvalWindows {
  int64_t length = 0;  // L: tokens per window
  int64_t stride = 0;  // S: 1 <= S <= L
  int64_t tokens = 0;  // N: target tokens scored over all windows (EvalPlan::tokens_scored)
  /// Windows in all: 1 + ceil((N - L) / S).
  int64_t count() const;
  /// e_k: the end (exclusive) of window k's targets, as an index into stream[1..N] from 0.
  int64_t end(int64_t k) const;
  /// The targets window k scores: e_k - e_{k-1}.
  int64_t scored(int64_t k) const;
};

/// For each length l = m * train_length (in the order of `multipliers`) its sliding windows with `stride` over the
/// plan's N target tokens (make_eval_plan's checks, and 1 <= stride <= l: an error naming run.eval_stride and the
/// length otherwise).
std::vector<EvalWindows> make_eval_windows(int64_t stream_tokens, int64_t train_length,
                                           const std::vector<int64_t>& multipliers, int64_t max_tokens,
                                           int64_t stride);

/// Windows [first, last) of `w` over `stream`: inputs (last - first, L) i64 and targets (last - first, L) i64, the
/// targets a window does not score set to kUnscoredTarget. Fresh tensors.
void eval_window_batch(const TokenStream& stream, const EvalWindows& w, int64_t first, int64_t last,
                       Tensor& inputs, Tensor& targets);

}  // namespace rpb::data
