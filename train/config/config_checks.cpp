// rpb/train/config/config_checks.cpp: the checks across the run config's tables (train/config/config_detail.h).
#include "train/config/config_detail.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/text.h"

#include "nn/limits.h"
#include "nn/position.h"
#include "train/data/passkey.h"
#include "train/data/task_registry.h"
#include "train/data/eval_segments.h"

namespace rpb::config_detail {

using toml_config::Table;
namespace L = nn::limits;

namespace {

// The tasks with an encoder framing, in the registry's order.
std::vector<std::string> encoder_tasks() {
  std::vector<std::string> names;
  for (const data::TaskInfo& t : data::tasks())
    if (t.algorithmic && t.algorithmic->encoder) names.emplace_back(t.name);
  return names;
}

}  // namespace

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
  if (task.algorithmic) {  // each length draws its own samples; the model reads the longest sample of a length
    const int64_t tokens = data::sequence_tokens(kind, longest, c.model.causal);
    if (tokens > L::kMaxSequence)
      run.fail_at(k.multipliers_key, what + " makes samples of " + std::to_string(tokens) +
                                         " tokens; expected at most " + std::to_string(L::kMaxSequence));
    const int64_t alphabet = data::alphabet_size(*task.algorithmic, c.task);
    if (task.algorithmic->max_length && longest > task.algorithmic->max_length(alphabet))
      run.fail_at(k.multipliers_key, what + ": a " + kind + " sample of that length needs more than task.alphabet = " +
                                         std::to_string(alphabet) + " holds (at most length " +
                                         std::to_string(task.algorithmic->max_length(alphabet)) + ")");
    return;
  }
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
  if (task.dims == 2 || task.retrieval || task.algorithmic)
    run.fail_at("eval_stride", "sliding-window evaluation scores a token stream; the " + kind + " task evaluates " +
                                   (task.dims == 2 ? "whole grids" : "whole samples") +
                                   ": expected 0 (nonoverlapping), found " + std::to_string(c.eval_stride));
  const int64_t shortest = *std::min_element(c.eval_multipliers.begin(), c.eval_multipliers.end()) * c.length;
  if (c.eval_stride > shortest)
    run.fail_at("eval_stride", "expected at most the shortest evaluation length " + std::to_string(shortest) +
                                   " (run.eval_multipliers x run.length), found " + std::to_string(c.eval_stride) +
                                   ": a window advances by at most its length");
}

void check_framing(Table& model, Table& task, const RunConfig& c, const std::string& kind) {
  const data::TaskInfo& t = data::task_info(kind);
  if (t.dims == 2) return;  // a grid model attends bidirectionally whatever model.causal says
  const data::AlgorithmicSpec* spec = t.algorithmic;
  if (!c.model.causal && !(spec && spec->encoder))
    model.fail_at("causal", "false asks for a bidirectional model, and the " + kind + " task " +
                                (spec ? "has no encoder framing (its literature trains it in the " +
                                            std::string(data::framing_name(spec->literature)) + "'s)"
                                      : "predicts each next token, which a bidirectional model would read") +
                                ": expected true; the tasks with an encoder framing are " +
                                join(encoder_tasks(), ", "));
  if (c.model.causal && spec && !spec->decoder)
    model.fail_at("causal", "true asks for a causal model, and the " + kind + " task has no decoder framing: expected "
                                                                             "false");
  if (!spec) return;
  if (c.task.min_length != 0 && c.task.min_length < spec->min_length)
    task.fail_at("min_length", "the " + kind + " task takes lengths of at least " + std::to_string(spec->min_length) +
                                   " (0: its shortest), found " + std::to_string(c.task.min_length));
  if (std::max(c.task.min_length, spec->min_length) > c.length)
    task.fail_at("min_length", "is the shortest training length and run.length the longest: expected at most " +
                                   std::to_string(c.length) + ", found " + std::to_string(c.task.min_length));
}

void check_grid(Table& grid, const RunConfig& c) {
  if (c.grid.eval_window > 0 && nn::scheme_info(c.position()).kind != nn::PositionKind::window)
    grid.fail_at("eval_window", "only the windowed 2-D schemes (swin, swin_v2) have a window to change");
  grid.done();
}

}  // namespace rpb::config_detail
