// rpb/nn/generate.h: text generation from a language model: incremental decoding with a KV cache (one token per
// forward after the prompt), greedy or sampled with a temperature and top-k, deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "nn/transformer.h"

namespace rpb::nn {

/// How each new token is picked.
struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax, the lowest id on ties); else softmax(logits / temperature)
  int64_t top_k = 0;         // > 0: sample among the k largest logits only (ties by lower id); 0: all
  uint64_t seed = 0;         // of the generator the draws come from
};

/// What generate() does.
struct GenerateOptions {
  int64_t tokens = 0;         // new tokens after the prompt
  SamplingOptions sampling;
  /// true: a KV cache, the prompt in one forward and then one token per forward. false: the whole sequence again for
  /// every new token (no cache; quadratic, for comparison and tests). Both give the same tokens.
  bool use_cache = true;
};

/// The token `logits` (V values) call for under `temperature` and `top_k` (see SamplingOptions); draws one uniform
/// from `gen` unless greedy. Throws rpb::Error for empty logits, a negative temperature or top_k.
int64_t sample_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen);

/// Throws rpb::Error "generate: ..." unless `model` can run at `positions` positions: within its scheme's longest
/// length (learned positions: position.max_positions) and nn::limits::kMaxSequence.
void check_generation_length(const LanguageModel& model, int64_t positions);

/// The prompt followed by options.tokens new tokens. Puts `model` in eval mode (no dropout) and records no tape.
/// The prompt must be non-empty with every id in [0, vocab); `on_token`, when given, gets each new token as it is
/// picked (to print it at once).
///
/// @code
/// rpb::Generator gen(0);
/// rpb::nn::TransformerOptions o;
/// o.vocab = 8; o.d_model = 16; o.heads = 2; o.layers = 1; o.d_ff = 32;
/// rpb::nn::LanguageModel lm(o, gen);
/// rpb::nn::GenerateOptions g;
/// g.tokens = 5;
/// g.sampling.temperature = 0;
/// CHECK(rpb::nn::generate(lm, {1, 2, 3}, g).size() == 8);
/// @endcode
std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& prompt, const GenerateOptions& options,
                              const std::function<void(int64_t)>& on_token = {});

}  // namespace rpb::nn
