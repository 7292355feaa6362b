// rpb/train/config/config_checks.cpp: the checks across the run config's tables (train/config/config_detail.h).
#include "train/config/config_detail.h"

#include <algorithm>
#include <string>

#include "nn/limits.h"
#include "nn/position.h"
#include "train/data/passkey.h"
#include "train/data/task_registry.h"
#include "train/data/eval_segments.h"

namespace rpb::config_detail {

using toml_config::Table;
namespace L = nn::limits;

// run.length and an evaluation's multipliers, once every table is read: the longest evaluation sequence holds at
// most limits::kMaxSequence positions (tokens, or the cells of a grid whose side is the length), and for the token
// tasks the evaluation can score the same tokens at every length (data::make_eval_plan's rule, checked before
// training instead of after it) from its token key and, for markov and lag, the task.eval_tokens of the stream.
void check_eval_lengths(Table& run, const RunConfig& c, const std::string& kind, const EvalKeys& k) {
  const data::TaskInfo& task = data::task_info(kind);
  const bool grid = task.dims == 2;
  const auto positions = [&](int64_t side) { return grid ? side * side : side; };  // side <= 2^26: no overflow
  const std::string cells = grid ? " cells" : " positions";
  const std::string length = std::to_string(c.length);
  if (positions(c.length) > L::kMaxSequence)  // only a grid: run.length's range holds it for the tokens
    run.fail_at("length", "a " + length + " x " + length + " grid has " + std::to_string(positions(c.length)) +
                              " cells; expected at most " + std::to_string(L::kMaxSequence) +
                              " (a side of at most 256)");
  const int64_t largest = *std::max_element(k.multipliers.begin(), k.multipliers.end());
  const int64_t longest = largest * c.length;  // <= 2^10 x 2^16
  const std::string what = "the longest " + std::string(k.what) + " length " + std::to_string(largest) +
                           " x run.length " + length + run.set_by("length") + " = " + std::to_string(longest);
  if (positions(longest) > L::kMaxSequence)
    run.fail_at(k.multipliers_key,
                what + (grid ? " (a grid of " + std::to_string(positions(longest)) + " cells)" : "") +
                    ": expected at most " + std::to_string(L::kMaxSequence) + cells + " per sequence");
  if (task.held_out == data::HeldOut::grids) return;  // each grid size draws its own held-out grids
  if (task.held_out == data::HeldOut::samples) {  // each length draws its own samples, their filler from a stream
    const int64_t shortest = data::passkey_min_length(c.task.passkey_digits);
    if (c.length < shortest)
      run.fail_at("length", "a passkey sample of task.passkey_digits = " + std::to_string(c.task.passkey_digits) +
                                " digits needs at least " + std::to_string(shortest) +
                                " positions (twice the digits, and a place for the key in every tenth of depth), "
                                "got run.length = " + length + run.set_by("length"));
    if (!task.reads_text && c.task.eval_tokens < longest)  // a text's split is checked once it is read
      run.fail_at(k.multipliers_key, what + " needs as many filler tokens; the " + kind + " filler stream has "
                                                "task.eval_tokens = " + std::to_string(c.task.eval_tokens));
    return;
  }
  for (const int64_t m : k.multipliers)
    if (largest % m != 0)
      run.fail_at(k.multipliers_key, "multiplier " + std::to_string(m) + " does not divide the largest, " +
                                         std::to_string(largest) + ": every length must score the same tokens");
  if (k.tokens < longest)
    run.fail_at(k.multipliers_key, what + " scores at least " + std::to_string(longest) + " tokens, over run." +
                                       k.tokens_key + " = " + std::to_string(k.tokens) + run.set_by(k.tokens_key));
  // A split of the data's own (kjv's books) is checked once the data is read.
  if (task.held_out == data::HeldOut::eval_tokens && c.task.eval_tokens - 1 < longest)
    run.fail_at(k.multipliers_key, what + " needs " + std::to_string(longest + 1) + " held-out tokens; the " + kind +
                                       " " + k.split + " stream has task.eval_tokens = " +
                                       std::to_string(c.task.eval_tokens));
}

// run.eval_stride against the task and the evaluation lengths: sliding windows run over a token stream, and advance
// by at most the shortest length.
void check_eval_stride(Table& run, const RunConfig& c, const std::string& kind) {
  if (c.eval_stride == 0) return;
  const data::TaskInfo& task = data::task_info(kind);
  if (task.dims == 2 || task.retrieval)
    run.fail_at("eval_stride", "sliding-window evaluation scores a token stream; the " + kind + " task evaluates " +
                                   (task.retrieval ? "whole samples" : "whole grids") +
                                   ": expected 0 (nonoverlapping), found " + std::to_string(c.eval_stride));
  const int64_t shortest = *std::min_element(c.eval_multipliers.begin(), c.eval_multipliers.end()) * c.length;
  if (c.eval_stride > shortest)
    run.fail_at("eval_stride", "expected at most the shortest evaluation length " + std::to_string(shortest) +
                                   " (run.eval_multipliers x run.length), found " + std::to_string(c.eval_stride) +
                                   ": a window advances by at most its length");
}

void check_grid(Table& grid, const RunConfig& c) {
  if (c.grid.eval_window > 0 && nn::scheme_info(c.position()).kind != nn::PositionKind::window)
    grid.fail_at("eval_window", "only the windowed 2-D schemes (swin, swin_v2) have a window to change");
  grid.done();
}

}  // namespace rpb::config_detail
