// rpb/train/data/task.h: a token task, the source of the train, valid and test streams, and make_task,
// which builds the task its options (train/data/task_options.h) name through the registry (train/data/task_registry.h).
// The tasks: train/data/markov.h, lag.h, kjv.h, text.h, passkey.h; grid2d.h is the grid workload's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/data/task_options.h"
#include "train/data/token_stream.h"

namespace rpb::data {

class Tokenizer;

/// A held-out split: valid (scored during training, run.eval_every) or test (scored by evaluations).
enum class Split { valid, test };

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
  /// A generated task's streams (markov, lag): `sample(stream id, tokens)` gives each, the train and valid streams
  /// only for DataUse::train (`options.use`; train_tokens and eval_tokens long), the test stream always.
  void sample_streams(const TaskOptions& options, const std::function<std::vector<int32_t>(uint64_t, int64_t)>& sample);

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

}  // namespace rpb::data
