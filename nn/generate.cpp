#include "nn/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/autograd.h"
#include "nn/limits.h"

namespace rpb::nn {

int64_t sample_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen) {
  RPB_CHECK(!logits.empty(), "generate", "no logits to pick a token from");
  RPB_CHECK(temperature >= 0 && std::isfinite(temperature), "generate", "temperature must be >= 0, got ", temperature);
  RPB_CHECK(top_k >= 0, "generate", "top_k must be >= 0 (0: all tokens), got ", top_k);
  const auto n = static_cast<int64_t>(logits.size());
  if (temperature == 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
  // The ids by logit, largest first (lower id first on ties); top-k keeps the first k.
  std::vector<int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  const int64_t keep = top_k > 0 ? std::min(top_k, n) : n;
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  ids.resize(static_cast<std::size_t>(keep));
  const double top = logits[ids[0]];
  std::vector<double> weight(ids.size());
  double total = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) total += weight[i] = std::exp((logits[ids[i]] - top) / temperature);
  double u = gen.uniform() * total;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (u < weight[i]) return ids[i];
    u -= weight[i];
  }
  return ids.back();  // u landed on the rounding of the sum
}

void check_generation_length(const LanguageModel& model, int64_t positions) {
  const PositionOptions po = position_options_for(model.options());
  const SchemeInfo& info = scheme_info(po);
  const int64_t limit = info.max_length(po);
  RPB_CHECK(limit == 0 || positions <= limit, "generate", "the prompt and the new tokens make ", positions,
            " positions, past the ", limit, " the ", po.scheme, " scheme runs at",
            info.length_option ? std::string(" (position.") + info.length_option + " = " + std::to_string(limit) + ")"
                               : std::string());
  RPB_CHECK(positions <= limits::kMaxSequence, "generate", "the prompt and the new tokens make ", positions,
            " positions, more than the ", limits::kMaxSequence, " a sequence may hold");
}

namespace {

// The logits of the last position of (1, T, V) logits.
std::vector<double> last_logits(const Tensor& logits) {
  const int64_t T = logits.size(1);
  return slice(logits, 1, T - 1, T).to_vector();
}

}  // namespace

std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& prompt, const GenerateOptions& o,
                              const std::function<void(int64_t)>& on_token) {
  RPB_CHECK(!prompt.empty(), "generate", "the prompt is empty: generation starts from at least one token");
  RPB_CHECK(o.tokens >= 0, "generate", "the number of new tokens must be >= 0, got ", o.tokens);
  const int64_t vocab = model.options().vocab;
  for (std::size_t i = 0; i < prompt.size(); ++i)
    RPB_CHECK(prompt[i] >= 0 && prompt[i] < vocab, "generate", "prompt token ", i, " is ", prompt[i],
              ", outside the vocabulary [0, ", vocab, ")");
  check_generation_length(model, static_cast<int64_t>(prompt.size()) + o.tokens);
  model.eval();
  NoGradGuard no_grad;
  Generator gen(o.sampling.seed);
  std::vector<int64_t> seq = prompt;
  KVCache cache;
  Tensor logits = model.forward(Tensor::indices({1, static_cast<int64_t>(seq.size())}, seq), o.use_cache ? &cache : nullptr);
  for (int64_t i = 0; i < o.tokens; ++i) {
    const int64_t next = sample_token(last_logits(logits), o.sampling.temperature, o.sampling.top_k, gen);
    seq.push_back(next);
    if (on_token) on_token(next);
    if (i + 1 == o.tokens) break;
    logits = o.use_cache ? model.forward(Tensor::indices({1, 1}, {next}), &cache)
                         : model.forward(Tensor::indices({1, static_cast<int64_t>(seq.size())}, seq));
  }
  return seq;
}

}  // namespace rpb::nn
