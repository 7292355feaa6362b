// rpb/train/data/eval_segments.cpp: the evaluation segments and sliding windows that score the same tokens at every
// length.
#include "train/data/eval_segments.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace rpb::data {

EvalPlan make_eval_plan(int64_t stream_tokens, int64_t train_length, const std::vector<int64_t>& multipliers,
                        int64_t max_tokens) {
  RPB_CHECK(train_length >= 1, "eval", "train_length must be >= 1, got ", train_length);
  RPB_CHECK(!multipliers.empty(), "eval", "need at least one length multiplier");
  RPB_CHECK(max_tokens >= 1, "eval", "max_tokens must be >= 1, got ", max_tokens);
  int64_t largest = 0;
  for (int64_t m : multipliers) {
    RPB_CHECK(m >= 1, "eval", "every length multiplier must be >= 1, got ", m);
    RPB_CHECK(m <= std::numeric_limits<int64_t>::max() / train_length, "eval", "multiplier ", m,
              " x train_length ", train_length, " overflows");
    largest = std::max(largest, m);
  }
  for (int64_t m : multipliers)
    RPB_CHECK(largest % m == 0, "eval", "length multiplier ", m, " does not divide the largest multiplier ", largest,
              ": the lengths could not all score the same tokens");
  const int64_t lmax = largest * train_length;
  const int64_t avail = std::min(max_tokens, stream_tokens - 1);
  const int64_t n = avail >= lmax ? avail / lmax * lmax : 0;
  RPB_CHECK(n > 0, "eval", "the largest length ", lmax, " (", largest, " x ", train_length, ") needs at least ",
            lmax + 1, " held-out tokens and max_tokens >= ", lmax, "; got a stream of ", stream_tokens,
            " tokens and max_tokens ", max_tokens);
  EvalPlan plan{train_length, {}, n};
  for (int64_t m : multipliers) plan.lengths.push_back(m * train_length);
  return plan;
}

std::vector<EvalSegments> make_eval_segments(const TokenStream& stream, int64_t train_length,
                                             const std::vector<int64_t>& multipliers, int64_t max_tokens) {
  const EvalPlan plan =
      make_eval_plan(static_cast<int64_t>(stream.size()), train_length, multipliers, max_tokens);
  std::vector<EvalSegments> out;
  for (int64_t l : plan.lengths) {
    const int64_t segs = plan.tokens_scored / l;
    EvalSegments e{l, Tensor::empty({segs, l}, DType::i64), Tensor::empty({segs, l}, DType::i64)};
    int64_t* in = e.inputs.mutable_data<int64_t>();
    int64_t* tg = e.targets.mutable_data<int64_t>();
    for (int64_t i = 0; i < plan.tokens_scored; ++i) {  // row-major (segment s, position j) is i = s*l + j
      in[i] = stream[i];
      tg[i] = stream[i + 1];
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---------------------------------------------------------------- sliding windows

int64_t EvalWindows::count() const { return 1 + (tokens - length + stride - 1) / stride; }

int64_t EvalWindows::end(int64_t k) const { return std::min(length + k * stride, tokens); }

int64_t EvalWindows::scored(int64_t k) const { return end(k) - (k == 0 ? 0 : end(k - 1)); }

std::vector<EvalWindows> make_eval_windows(int64_t stream_tokens, int64_t train_length,
                                           const std::vector<int64_t>& multipliers, int64_t max_tokens,
                                           int64_t stride) {
  const EvalPlan plan = make_eval_plan(stream_tokens, train_length, multipliers, max_tokens);
  std::vector<EvalWindows> out;
  for (int64_t l : plan.lengths) {
    RPB_CHECK(stride >= 1 && stride <= l, "eval", "run.eval_stride ", stride, " does not fit the evaluation length ",
              l, ": a sliding window advances by 1 to the window's length tokens (0: nonoverlapping segments)");
    out.push_back({l, stride, plan.tokens_scored});
  }
  return out;
}

void eval_window_batch(const TokenStream& stream, const EvalWindows& w, int64_t first, int64_t last,
                       Tensor& inputs, Tensor& targets) {
  RPB_CHECK(first >= 0 && first <= last && last <= w.count(), "eval", "windows [", first, ", ", last,
            ") out of the ", w.count(), " windows");
  const int64_t L = w.length;
  inputs = Tensor::empty({last - first, L}, DType::i64);
  targets = Tensor::empty({last - first, L}, DType::i64);
  int64_t* in = inputs.mutable_data<int64_t>();
  int64_t* tg = targets.mutable_data<int64_t>();
  for (int64_t k = first; k < last; ++k) {
    const int64_t start = w.end(k) - L, from = L - w.scored(k);  // the window's first token; its first scored target
    for (int64_t j = 0; j < L; ++j) {
      in[(k - first) * L + j] = stream[start + j];
      tg[(k - first) * L + j] = j < from ? kUnscoredTarget : stream[start + j + 1];
    }
  }
}

}  // namespace rpb::data
