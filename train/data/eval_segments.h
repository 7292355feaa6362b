// rpb/train/data/eval_segments.h: what an evaluation scores: the lengths and token count (EvalPlan), the nonoverlapping
// segments and the sliding windows that score the same tokens at every length.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "train/data/token_stream.h"

namespace rpb::data {

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
