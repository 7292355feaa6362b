// rpb/train/config/memory.h: what a run needs in memory, estimated from its config before anything is built.
//
// `rpb train`, `eval`, `extrapolate` and `inspect` compare the estimate with a limit (the machine's available memory,
// or --max-memory) and refuse a config that would not fit, naming the key that drives the largest part, instead of
// failing minutes later with an allocation error. The limit is also set as the cap of tensor storage (core/tensor.h
// set_memory_limit), so no allocation goes past it either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "train/config/config.h"

namespace rpb {

/// One part of the estimate: its bytes and the config key that sets its size.
struct MemoryPart {
  const char* what = "";  // "parameters", "activations of a training step", ...
  const char* key = "";   // "model.d_model", "run.batch", ...
  std::size_t bytes = 0;
};

/// The estimate of one run. Parameters are exact (the models count them without being built); the rest are upper
/// estimates of tensor storage, which tests/test_memory.cpp holds against measured peaks.
struct MemoryEstimate {
  int64_t parameters = 0;
  MemoryPart weights;      // the parameters and persistent buffers
  MemoryPart training;     // gradients and optimizer state
  MemoryPart activations;  // the larger of a training step and an evaluation forward
  MemoryPart data;         // token streams, the Markov table, evaluation segments

  std::size_t total() const;
  /// The largest part.
  const MemoryPart& largest() const;
  /// "about 1.2 GiB (parameters 40.0 MiB, gradients and optimizer state 120 MiB, ...)".
  std::string describe() const;
};

/// What a command builds from a config, and so what its estimate counts.
enum class MemoryUse {
  /// `rpb train`: the model, gradients and optimizer state, a training step's activations (or an evaluation's, the
  /// larger), every split of the task and the evaluation segments.
  train,
  /// `rpb eval`: the model, one evaluation forward (run.eval_batch at the longest length), the task's test split
  /// and the evaluation segments; no gradients, optimizer state, training activations or training split.
  evaluate,
  /// `rpb generate`: the model, one forward of a single sequence at the longest evaluation length (the command sets
  /// it to the generated length) and a kjv text.
  generate,
  /// `rpb inspect`: the model alone.
  inspect,
};

/// The estimate for `config` as `use` builds it; `vocab` is the task's vocabulary (the model's embedding rows). The
/// parts a use does not build are 0 bytes. Throws rpb::Error naming the key when a size overflows.
MemoryEstimate estimate_memory(const RunConfig& config, int64_t vocab, MemoryUse use = MemoryUse::train);

/// The vocabulary of `config`'s task when the config fixes it (markov, lag, grid2d: task.vocab), else its largest value
/// (kjv: 256, one id per byte value of the text).
int64_t vocab_bound(const RunConfig& config);

/// MemAvailable of /proc/meminfo in bytes; 0 when it cannot be read.
std::size_t available_memory();

/// Parses a size with an optional binary unit: "512M", "8G", "1.5GiB", "1073741824". Throws rpb::Error naming `flag` on
/// anything else.
std::size_t parse_memory_size(const std::string& text, const std::string& flag);

/// "40.0 MiB", "1.21 GiB".
std::string format_bytes(std::size_t bytes);

/// The memory limit runs are held to, and where it came from ("--max-memory 8G", "the available memory").
struct MemoryBudget {
  std::size_t bytes = 0;  // 0: no limit
  std::string source;
};

/// Sets the budget every Run checks its estimate against, and caps tensor storage at it (core/tensor.h
/// set_memory_limit). The command line sets it from --max-memory, else from available_memory(); a library user has none
/// until they set one.
void set_memory_budget(const MemoryBudget& budget);
const MemoryBudget& memory_budget();

/// Throws rpb::Error "<what>: <key>: the run needs about X (...), more than the memory limit of Y (<source>); reduce
/// <key> ... or raise --max-memory" when estimate.total() exceeds the budget. Either way the estimate is kept for
/// out_of_memory_message().
void check_memory(const MemoryEstimate& estimate, const MemoryBudget& budget, const std::string& what);

/// What the command line says when an allocation fails (std::bad_alloc) although the estimate fit: the estimate
/// check_memory last saw, its largest part and that part's key ("<what>: run.batch: out of memory: an allocation
/// failed although the estimate, about X (...), fit the memory limit of Y ...; reduce run.batch ..."), or, before
/// any estimate, that memory ran out before rpb estimated it.
std::string out_of_memory_message();

}  // namespace rpb
