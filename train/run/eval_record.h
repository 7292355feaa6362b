// rpb/train/run/eval_record.h: the record of one evaluation of a checkpoint, as `rpb train` and `rpb eval` write it into
// the run folder: <run>/eval/<checkpoint stem>-<tokens>.json (format below).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/run/eval_result.h"

namespace rpb {

/// One evaluation: which checkpoint, on what, and the result at every length.
struct EvalRecord {
  std::string checkpoint;         // the checkpoint's file name ("step_00000600.h5")
  int64_t step = 0;               // its step
  std::string checkpoint_sha256;  // of the checkpoint file's bytes
  std::string config_digest;      // of its stored config's identity (train/config/run_identity.h config_digest)
  std::string run;                // run.name of its config
  std::string scheme;             // position.scheme
  std::string untrained;          // a table scheme's position.untrained ("keep", "nearest"); "" for the others
  std::string task;               // the task, one line (Workload::describe)
  int64_t train_length = 0;       // run.length
  int64_t max_length = 0;         // the longest length the scheme runs at (0: unbounded)
  std::optional<double> optimal_perplexity;  // exp(entropy rate) where the task knows it
  std::vector<LengthResult> lengths;
  bool default_lengths = true;    // the config's eval_multipliers (false: lengths chosen on the command line)
  /// The data scored (train/checkpoint/data_identity.h text_match_name): "generated" (markov, lag, grid2d: the config fixes
  /// it), "training" (kjv: the training text), "other" (kjv: another text, eval --other-text) or "unverified" (kjv:
  /// a checkpoint written before rpb recorded its text).
  std::string text = "generated";
  std::string text_sha256;        // kjv: the SHA-256 of the text scored (data::KjvTask::text_sha256); "" otherwise

  /// The target tokens scored at every length (0 when no length ran).
  int64_t tokens() const;
};

/// The record as JSON:
///   {"format": "rpb-eval-1", "checkpoint": "step_00000600.h5", "step": 600, "checkpoint_sha256": "<64 hex>",
///    "config_digest": "<64 hex>", "run": "t5", "scheme": "t5", "untrained": "keep" | "nearest" | null, "task": "...", "train_length": 64, "max_length": null | N, "tokens": 8192,
///    "optimal_perplexity": 3.21 | null, "entropy_rate": 1.17 | null,
///    "text": "generated" | "training" | "other" | "unverified", "text_sha256": "<64 hex>" | null,
///    "lengths": [{"length": 64, "multiplier": 1, "nll": 1.2345, "perplexity": 3.437, "tokens": 8192,
///                 "optimal_perplexity": 3.21 | null,
///                 "attention": null | [{"layer": 0, "head": 0, "mean_distance": 3.2, "entropy": 1.1}, ...]}, ...]}
/// nll is the mean NLL in nats, perplexity exp(nll); a length the scheme cannot run at has null nll, perplexity and
/// tokens. "attention" holds the attention diagnostics per layer and head (LengthResult::attention, train/workload.h:
/// mean attention distance in positions, or cells on a grid, and entropy in nats, over the evaluation's sample);
/// null when not measured (run.eval_diagnostics off, a length the scheme cannot run at).
/// Numbers carry 17 significant digits (they read back as the same doubles).
std::string eval_record_json(const EvalRecord& record);

/// The record's file name: "<checkpoint stem>-<tokens>.json" ("step_00000600-8192.json"), with "-L<l1>_<l2>..."
/// before ".json" when the lengths were chosen on the command line ("step_00000600-8192-L64_1024.json") and
/// "-nearest" when untrained rows read their nearest trained row, and "-text<first 12 hex digits of its sha256>" for
/// another text than the training text. The same checkpoint evaluated the same way again replaces its record.
std::string eval_record_name(const EvalRecord& record);

/// Writes the record into `run_dir`/eval/ (created when missing) atomically (write_file_atomically) and returns the
/// file's path. Throws rpb::Error when `run_dir`/eval is a symbolic link (never followed) or not a folder.
std::string write_eval_record(const std::string& run_dir, const EvalRecord& record);

}  // namespace rpb
