// rpb/cli/bias.h: `rpb bias`, which prints what a position scheme adds to the attention scores.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <iostream>
#include <string>

#include "nn/position/scheme.h"

namespace rpb {

/// The options of `rpb bias`; each field is set by the flag named beside it.
struct BiasOptions {
  /// --scheme (a 1-D scheme: nn::scheme_names(1)), --heads, --causal, and the options that change what is printed
  /// (nn/position/options.h bias_flag: --num-buckets, --max-distance, --max-relative-position, --lambda).
  /// The defaults of a config, but bidirectional (without --causal).
  nn::PositionOptions position{.causal = false};
  int64_t query_length = 8;  // --query-length: rows
  int64_t key_length = 8;    // --key-length: columns
  int64_t query_offset = 0;  // --query-offset: position of the first query (a KV cache's length)
  bool json = false;         // --json: one JSON object instead of tables
};

/// Runs `rpb bias`. Prints to `out`, for queries at query_offset .. query_offset + query_length - 1 and keys
/// at 0 .. key_length - 1:
///   - t5 and shaw: the (query_length, key_length) bucket or index matrix (the rows of the learned table
///     that each score reads; no bias values, since no checkpoint can be given yet);
///   - alibi and log_decay (fixed): the (heads, query_length, key_length) bias;
///   - rope, sinusoidal, learned and none: what the scheme is, and that it has no bias matrix.
/// With `json`, one object {"scheme": ..., "kind": ..., "buckets": [[...]], "bias": [[[...]]]}, where
/// "buckets" appears only for t5 and shaw and "bias" only for the fixed bias schemes.
/// Returns 0, or 2 after writing a message that names the flag to `err` when an option is invalid: outside its
/// range (the config's limits for the same keys, nn/limits.h; lengths at most limits::kMaxSequence, the last query
/// at most limits::kMaxPosition), rejected by the scheme, or asking for more than 16384 printed values
/// (heads x query_length x key_length for a fixed bias, query_length x key_length for an index).
int run_bias_command(const BiasOptions& options, std::ostream& out, std::ostream& err = std::cerr);

/// `rpb bias`'s options on `cmd`; the runner prints to stdout and returns run_bias_command's code.
std::function<int()> add_bias_command(CLI::App& cmd);

}  // namespace rpb
