// rpb/train/data/task_registry.h: the registry of tasks (task.kind).
//
// Every task is one row of the registry (train/data/task_registry.cpp) and a file of its own (train/data/kjv.cpp,
// train/data/grid2d.cpp; markov and lag share train/data/task.cpp). The row says how many dims the task's positions
// have, how its data is built, how large its vocabulary can be, what its data costs in memory, how its held-out splits
// are sized and whether it reads a text file. Config validation, the memory estimate, the stored-model checks, `rpb
// eval`, `rpb generate`, `rpb inspect`, the help text and the sweep all read the row: after the config boundary
// nothing compares task.kind with a name.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "train/data/algorithmic.h"
#include "train/data/task.h"

namespace rpb::data {

/// How a task's held-out splits are sized (the eval-stream rule).
enum class HeldOut {
  eval_tokens,  // generated streams of task.eval_tokens tokens: the config checks every evaluation length against
                // them, and `rpb eval --tokens` lengthens them (a longer stream starts with the same tokens)
  data,         // the data's own splits (kjv: its books), checked once the data is read; the test split is fixed
  grids,        // every evaluation size draws its own held-out grids (run.eval_tokens cells): no stream to check
  samples,      // every evaluation length draws its own held-out samples (passkey: task.passkey_samples per tenth of
                // depth) with filler from a held-out stream, which must hold the longest: a generated stream of
                // task.eval_tokens tokens, checked with the config, or for a task that reads text (passkey_text) the
                // text's split, checked once the text is read
  instances     // every evaluation length draws its own held-out samples from the task's generator alone
                // (task.eval_samples of them: the algorithmic tasks): nothing to check
};

/// A task's data in memory, for the memory estimate.
struct DataMemory {
  int64_t bytes = 0;          // saturating: a size past int64 reads as INT64_MAX
  const char* key = nullptr;  // the config key of its largest part when not the streams' ("task.order"), or null
};

/// Builds a token task from checked options (the registry's `make`).
using TaskFactory = std::unique_ptr<Task>(const TaskOptions& options);

/// One row of the registry.
struct TaskInfo {
  const char* name;     // the config value (task.kind), and the sweep's folder of the task's runs
  int64_t dims;         // 1: a token stream, learned by a LanguageModel; 2: the cells of grids, by a GridModel
  const char* summary;  // one line for help texts
  /// Builds the 1-D token task (data::Task). Null for the 2-D tasks, which the grid workload builds from [task]
  /// (train/workload_grid.cpp: grid2d's Grid2DTask); a task of dims 2 has no stream to build here.
  TaskFactory* make;
  /// Null: the vocabulary is task.vocab. Otherwise the vocabulary comes from the data (kjv: the text's distinct bytes;
  /// text: its tokenizer's), known only once it is read, or adds ids of its own (passkey: task.vocab + 12), and holds
  /// at most this many ids: the memory estimate sizes
  /// the model with it, and a checkpoint without a recorded vocabulary is matched against every size up to it.
  int64_t (*data_vocab_bound)(const TaskOptions& options);
  /// The bytes its data holds for `use` (streams, tables, a text).
  DataMemory (*memory)(const TaskOptions& options, DataUse use);
  HeldOut held_out;
  /// True when it reads a text file (task.kjv_path, task.path): `rpb eval` and `rpb generate` read the text `--data`
  /// names (kjv: never the stored path; a stored tokenizer's task: by default the stored task.path) and name it as an
  /// input, and a checkpoint records its digest (train/checkpoint/data_identity.h), which they check.
  bool reads_text;
  /// The config key of the text it reads ("task.kjv_path", "task.path"; `rpb eval --data` replaces it) and its member
  /// of TaskOptions; null for a task that reads no text.
  const char* text_key = nullptr;
  std::string TaskOptions::*text_path = nullptr;
  /// True when it tokenizes the text with task.tokenizer (text): its checkpoints store the tokenizer, so `rpb
  /// generate` and `rpb inspect` read no text and `rpb eval` encodes the text with the stored tokenizer; it reads the
  /// keys of the corpus and the tokenizer (task.path, task.documents, ...), which stay out of other tasks' configs.
  bool stores_tokenizer = false;
  /// True when its samples hold a key the model must retrieve (passkey, passkey_text: train/data/passkey.h): it trains on the
  /// answer's loss alone and is evaluated by retrieval accuracy per length and depth (the passkey workload,
  /// train/workload_passkey.cpp); it reads the keys task.passkey_digits and task.passkey_samples, which stay out of
  /// other tasks' configs.
  bool retrieval = false;
  /// Non-null for the algorithmic tasks (train/data/algorithmic.h): the spec that builds their samples, names their
  /// alphabet and says which framings they run in (model.causal = false: the encoder's; true: the decoder's). The
  /// algorithmic workload (train/workload_algorithmic.cpp) trains them on their answers and scores per-token accuracy
  /// and exact match per length; they read task.alphabet (a spec with a free alphabet), task.min_length and
  /// task.eval_samples, which stay out of other tasks' configs. One row per spec of algorithmic_specs(), made from it.
  const AlgorithmicSpec* algorithmic = nullptr;
};

/// The tokens a model reads for a sample of length `length` (run.length and its multiples) of task `kind`, with
/// causal attention or not: the length itself, or for an algorithmic task its longest sample (sample_length), which
/// holds the output positions or the answer too.
int64_t sequence_tokens(const std::string& kind, int64_t length, bool causal);

/// Every row, in the registry's order (the order of every list of names: config choices, the help text, sweeps).
const std::list<TaskInfo>& tasks();
/// The names of the tasks of `dims` (1 or 2; 0: every task), in the registry's order.
std::vector<std::string> task_names(int64_t dims = 0);
/// The names of the tasks whose row has `flag` set (&TaskInfo::stores_tokenizer: text, passkey_text), in the
/// registry's order.
std::vector<std::string> task_names_with(bool TaskInfo::*flag);
/// The row named `name`, or null.
const TaskInfo* find_task(const std::string& name);
/// The row named `name`; throws rpb::Error (naming task.kind and the choices) for an unknown name.
const TaskInfo& task_info(const std::string& name);
/// One line per task, "  <name>  <summary> (2-D)", for help texts.
std::string task_help();

/// Test hook: adds `row` at the end of the registry (a task compiled only into the tests) and returns it; a name
/// already registered throws. remove_task takes it out again.
const TaskInfo& register_task(const TaskInfo& row);
/// Test hook: removes the row register_task added under `name`; the built-in rows stay.
void remove_task(const std::string& name);

}  // namespace rpb::data
