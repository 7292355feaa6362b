// rpb/cli/eval_report.h: an evaluation's record and its tables, as `rpb train` (after training) and `rpb eval`
// print and record them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "train/run/eval_record.h"
#include "train/trainer.h"

namespace rpb {

/// The record of `results`, evaluated by `run` from the checkpoint `file` at `step`; `sha256` is the digest of the
/// bytes loaded from it (Checkpoint::file_sha256), not of whatever the path holds now.
EvalRecord make_eval_record(const Run& run, const std::vector<LengthResult>& results, const std::string& file,
                            int64_t step, const std::string& sha256);

/// The perplexity table of `record` (markdown), as `rpb train` and `rpb eval` print it, and under it what it shows:
/// the checkpoint, the tokens scored, the protocol ("Protocol: nonoverlapping segments ..." or "Protocol: sliding
/// window, stride 32 ..."), the task's description and its optimal perplexity.
void print_eval_table(const EvalRecord& record, std::ostream& out);

/// The attention diagnostics of `record`, a markdown table per length (layer, head, mean distance, entropy), as
/// `rpb eval --diagnostics` prints them after the perplexity table; a line saying why where a length has none.
void print_attention_tables(const EvalRecord& record, std::ostream& out);

/// Writes `record` into `run_dir`/eval/ and says where on stderr; returns the file.
std::string record_evaluation(const std::string& run_dir, const EvalRecord& record);

}  // namespace rpb
