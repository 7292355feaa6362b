// rpb/cli/eval.h: `rpb eval`, perplexity of a checkpoint at several lengths (its record and tables:
// cli/eval_report.h).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "nn/position/options.h"

namespace rpb {

/// What `rpb eval` was asked.
struct EvalOptions {
  std::string checkpoint;        // a checkpoint file, a run folder (its `latest`) or a run folder's `latest` file
  std::vector<int64_t> lengths;  // multiples of the train length; empty: the config's eval_multipliers
  /// --data: the text of a run that reads one. "": kjv's default path (never the one stored in the checkpoint), or
  /// for a run of one's own text (text, passkey_text) the stored task.path, when it holds the text whose digest the
  /// checkpoint records.
  std::string kjv_path;
  bool other_text = false;       // a text other than the training text is intended (train/checkpoint/data_identity.h)
  int64_t tokens = 0;            // > 0: target tokens scored at every length, instead of run.eval_tokens
  std::optional<int64_t> stride;  // run.eval_stride: 0 nonoverlapping, S sliding windows (absent: the stored config's)
  /// The position options asked (--untrained nearest, --rope-scaling yarn, --blockwise: the option rows with an
  /// eval_name, nn/position/options.h), each once, in the option table's order; the others: the stored config's.
  std::vector<nn::PositionSetting> position;
  std::string device;            // "cpu" or "cuda": where to evaluate ("": the CPU, whatever device trained it)
  bool json = false;             // print the JSON record instead of the table
  bool diagnostics = false;      // measure the attention diagnostics and print their table per length
  bool no_record = false;        // do not write the record into the run folder
  std::string out;               // also write the record to this file ("": not)
};

/// Evaluates the checkpoint `options` names. The table (or the JSON record) goes to stdout. The record is written to
/// <run>/eval/ when the checkpoint lies in a run folder of ours (is_run_folder) and no_record is off, and to `out`
/// when given (first: train/run/output_file.h; an `out` it refuses, such as the checkpoint itself or a file of a run
/// folder, is refused with rpb::UsageError before the checkpoint is read, and nothing is written); a checkpoint
/// elsewhere (a shared file) gets nothing written unless `out` is given. Where a record went is said on stderr. The
/// record's file name holds every option that changes the record (lengths, the position options asked,
/// diagnostics, another text, a sliding-window stride: train/run/eval_record.h EvalRecordOptions), so evaluations asked differently never replace each other's record;
/// `json`, `no_record` and `out` change where it goes, not what it holds. The record carries the provenance
/// (train/io/provenance.h: rpb's version and commit, the command line, the date).
/// `lengths` holding a length twice, or more than run_limits::kMaxLengths, is refused (rpb::UsageError) first.
/// A run of one's own text without `kjv_path` reads its stored task.path: one that is missing or not a file or a
/// folder, a checkpoint that records no digest of its text, and (unless `other_text`) a text of another digest are
/// refused with rpb::UsageError naming --data.
int cmd_eval(const EvalOptions& options);

/// Perplexity of a checkpoint at `lengths` (empty: the config's multiples of the train length). A kjv run reads
/// the text at `kjv_path` ("": the default path), never the path stored in the checkpoint.
int cmd_eval(const std::string& checkpoint, const std::vector<int64_t>& lengths, const std::string& kjv_path = "");

/// Adds `rpb eval`'s arguments to `cmd` (the registry's row in cli/commands.cpp).
CommandRunner add_eval_command(CLI::App& cmd);

}  // namespace rpb
