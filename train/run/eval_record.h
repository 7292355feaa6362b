// rpb/train/run/eval_record.h: the record of one evaluation of a checkpoint, as `rpb train` and `rpb eval` write it into
// the run folder: <run>/eval/<checkpoint stem>-<tokens><options>.json (format below, name eval_record_name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nn/position/options.h"
#include "train/io/json_text.h"
#include "train/io/provenance.h"
#include "train/run/eval_result.h"

namespace rpb {

/// Every option of an evaluation that changes its record (what `rpb eval` was asked beyond the checkpoint and its
/// stored config), as eval_record_name puts it into the file name: two evaluations of one checkpoint share a file
/// only when they were asked the same (and scored as many tokens, always in the name). The evaluation's own settings
/// are members; a position option (`rpb eval --untrained`, `--rope-scaling`, ...) is a row of the option table with
/// an eval_name (nn/position/options.h), which gives its flag, its place in the name and in the JSON: an option
/// that changes the record is one row there. A new setting of the evaluation's own (a stride, ...) goes here:
/// eval_record_name takes the struct apart member by member (a structured binding of all of them), so it does not
/// compile until the setting has its place in the name.
struct EvalRecordOptions {
  std::vector<int64_t> lengths;  // eval --lengths: the lengths asked for, in order; empty: the config's eval_multipliers
  bool diagnostics = false;      // eval --diagnostics: attention diagnostics measured whatever run.eval_diagnostics says
  std::string other_text;        // eval --other-text scoring another text: its SHA-256; "": the training text (or none)
  /// The protocol the numbers were scored with: 0 nonoverlapping segments; S >= 1 sliding windows advanced by S
  /// (run.eval_stride or eval --stride, data::EvalWindows). Set for `rpb train`'s records too.
  int64_t stride = 0;
  /// The position options asked (eval --untrained nearest, --rope-scaling yarn, --blockwise: rows with an
  /// eval_name), each once, in the option table's order; none: the stored config's values.
  std::vector<nn::PositionSetting> position;
  bool operator==(const EvalRecordOptions&) const = default;

  /// The setting of position option `key` asked, or null.
  const nn::PositionSetting* asked(const std::string& key) const;
};

/// One evaluation: which checkpoint, on what, and the result at every length.
struct EvalRecord {
  std::string checkpoint;         // the checkpoint's file name ("step_00000600.h5")
  int64_t step = 0;               // its step
  std::string checkpoint_sha256;  // of the checkpoint file's bytes
  std::string config_digest;      // of its stored config's identity (train/config/run_identity.h config_digest)
  std::string run;                // run.name of its config
  std::string scheme;             // position.scheme
  std::string untrained;          // a table scheme's position.untrained ("keep", "nearest"); "" for the others
  std::string rope_scaling;       // a rope run's position.rope_scaling when not "none" ("yarn"); "" otherwise (and
                                  // for a record written before rope scaling: none)
  double rope_factor = 0;         // the factor that scaling used (rope_factor, or the largest evaluation multiplier;
                                  // per length: the longest length's, L / L0)
  bool rope_factor_per_length = false;  // the factor was L / L0 at each length (position.rope_factor_per_length)
  std::string task;               // the task, one line (Workload::describe)
  int64_t train_length = 0;       // run.length
  int64_t max_length = 0;         // the longest length the scheme runs at (0: unbounded)
  std::optional<double> optimal_perplexity;  // exp(entropy rate) where the task knows it
  std::vector<LengthResult> lengths;
  EvalRecordOptions options;      // what the evaluation was asked (none for `rpb train`'s)
  /// The data scored (train/checkpoint/data_identity.h text_match_name): "generated" (markov, lag, grid2d: the config fixes
  /// it), "training" (kjv: the training text), "other" (kjv: another text, eval --other-text) or "unverified" (kjv:
  /// a checkpoint written before rpb recorded its text).
  std::string text = "generated";
  std::string text_sha256;        // kjv: the SHA-256 of the text scored (data::KjvTask::text_sha256); "" otherwise
  Provenance provenance;          // who wrote the record, how and when; empty when read from an rpb-eval-2 or -1 record

  /// The target tokens scored at every length (0 when no length ran).
  int64_t tokens() const;
  /// Whether the lengths are the config's eval_multipliers (not chosen on the command line).
  bool default_lengths() const { return options.lengths.empty(); }
};

/// The format an eval record's "format" key names ("rpb-eval-3": without "protocol" and options' "stride", every
/// number nonoverlapping; "rpb-eval-2": without "provenance" either; "rpb-eval-1": before rpb wrote JSON through
/// nlohmann, numbers with 17 significant digits and no "default_lengths"). A reader that knows no protocol refuses
/// an rpb-eval-4 record rather than take sliding-window numbers for nonoverlapping ones.
inline constexpr const char* kEvalRecordFormat = "rpb-eval-4";
/// The largest eval record read_eval_record reads (a record of 64 lengths x 64 layers x 64 heads is ~30 MiB).
inline constexpr std::size_t kMaxEvalRecordBytes = std::size_t(64) << 20;

/// The record as JSON (members in this order):
///   {"format": "rpb-eval-4",
///    "provenance": {"rpb_version": "0.1.0", "commit": "<40 hex>[-dirty]" | "unknown", "command": "...",
///                   "date": "2025-01-31T12:34:56Z"} (train/io/provenance.h),
///    "checkpoint": "step_00000600.h5", "step": 600, "checkpoint_sha256": "<64 hex>",
///    "config_digest": "<64 hex>", "run": "t5", "scheme": "t5", "untrained": "keep" | "nearest" | null,
///    ["rope_scaling": "linear" | "ntk" | "dynamic" | "yarn", "rope_factor": 8,] (only for a rope run evaluated with a
///    scaling: a record without them was evaluated with none) [, "rope_factor_per_length": true] (only when the
///    factor was L / L0 at each length; rope_factor is then the longest length's), "task": "...",
///    "train_length": 64, "max_length": null | N, "tokens": 8192,
///    "optimal_perplexity": 3.21 | null, "entropy_rate": 1.17 | null,
///    "text": "generated" | "training" | "other" | "unverified", "text_sha256": "<64 hex>" | null,
///    "default_lengths": true | false,
///    "protocol": "nonoverlapping" | "sliding_window" (eval_protocol_name of options.stride),
///    "options": {"lengths": null | [64, 1024], "untrained": null | "keep" | "nearest", "diagnostics": true | false,
///                "other_text": null | "<64 hex>", "stride": null | 32[, "blockwise": true][, "rope_scaling": null |
///                "none" | "linear" | ..., "rope_factor": null | 8]} (EvalRecordOptions; null: not asked, and for
///                "stride" nonoverlapping). The position options (the rows with an eval_name, nn/position/options.h)
///                go by their key, a value of their type: one of the first options (not PositionOptionInfo::added,
///                "untrained") after "lengths", always written; an added one after "stride", in the table's order,
///                written when asked, or as null when another added option read by the same schemes was
///                ("rope_factor": null beside "rope_scaling"), so the records of every other evaluation stay byte
///                for byte as they were; a boolean is asked only as true),
///    "lengths": [{"length": 64, "multiplier": 1, "nll": 1.2345, "perplexity": 3.437, "tokens": 8192,
///                 "optimal_perplexity": 3.21 | null, ["bytes": 6671, "bits_per_byte": 1.856 | null,] (only for a
///                 text run: the bytes of text the scored tokens stand for, LengthResult::bytes)
///                 ["accuracy": 0.97, "depth_accuracy": [10 shares, per tenth of depth], "samples_per_depth": 100,]
///                 (only for a passkey run: greedy decoding's exact matches, LengthResult::accuracy)
///                 "attention": null | [{"layer": 0, "head": 0, "mean_distance": 3.2, "entropy": 1.1}, ...]
///                 [, "position_loss": {"loss": [1.3 | null, ...], "targets": [128, ...]}] (only where measured:
///                 the mean NLL at each position of the sequences scored and the targets it is over, null where none,
///                 LengthResult::position_loss)}, ...]}
/// nll is the mean NLL in nats, perplexity exp(nll); a length the scheme cannot run at has null nll, perplexity and
/// tokens. "attention" holds the attention diagnostics per layer and head (LengthResult::attention, train/workload.h:
/// mean attention distance in positions, or cells on a grid, and entropy in nats, over the evaluation's sample; for
/// passkey retrieval over the answer's queries of its first 100 samples);
/// null when not measured (run.eval_diagnostics off, a length the scheme cannot run at). A value that is not
/// finite is null. Numbers are the shortest text that reads back as the same double.
Json eval_record_object(const EvalRecord& record);
/// eval_record_object's text (train/io/json_text.h json_text: indented by 2, a final newline).
std::string eval_record_json(const EvalRecord& record);

/// The record `json` holds (an "rpb-eval-4", "-3", "-2" or "-1" record; the older ones were scored nonoverlapping,
/// read with stride 0, and -2 and -1 have no provenance, read as empty); `source` names it in errors ("eval record <path>") and `file_name` is its file's name
/// (an rpb-eval-1 record's default_lengths is read from it). An rpb-eval-2 or -1 record's options are those its
/// file name showed: its lengths when not the default ones, "nearest" for a record evaluated so and the text's
/// SHA-256 for another text. An
/// rpb-eval-1 record written before rpb recorded the text scored has no "text" and "text_sha256": its text reads as
/// "unverified" for a kjv task (its "task" starts "kjv:"), else "generated", and its text_sha256 as "". The values
/// derived from others ("tokens", "entropy_rate", "perplexity", a length's "optimal_perplexity") are not read; an
/// attention value written as null reads as NaN. Throws rpb::Error naming the source and the key for a missing
/// key, a value of another type or another format.
EvalRecord eval_record_from_json(const Json& json, const std::string& source, const std::string& file_name);

/// Reads the eval record at `path` (at most kMaxEvalRecordBytes, train/io/input_file.h): the record
/// write_eval_record wrote, as eval_record_from_json reads it. Throws rpb::Error naming the file (and the key).
EvalRecord read_eval_record(const std::string& path);


/// The file name of the record of `checkpoint` (a file name or path) scoring `tokens` tokens at each length with
/// `options`: "<checkpoint stem>-<tokens>.json" ("step_00000600-8192.json"), and before ".json" one part per option
/// that is set, in the JSON's order: "-L<l1>_<l2>..." (lengths), the first position options ("-<untrained>",
/// "-nearest"), "-diag" (diagnostics), "-text<first 12 hex digits>" (other_text), "-S<stride>" (a sliding-window
/// stride), then the added position options, each "-<eval_name><value>" ("-blockwise", "-rope_yarn", "-factor8"):
/// "step_00000600-8192-L64_1024-nearest-diag.json", "step_00000600-8192-S32.json".
std::string eval_record_name(const std::string& checkpoint, int64_t tokens, const EvalRecordOptions& options);

/// The record's file name: eval_record_name of its checkpoint, tokens() and options. The same checkpoint evaluated
/// the same way again replaces its record.
std::string eval_record_name(const EvalRecord& record);

/// The protocol of a stride as records and results name it: "nonoverlapping" (0) or "sliding_window".
std::string eval_protocol_name(int64_t stride);
/// The protocol in words, as tables print it: "nonoverlapping segments" or "sliding window, stride 32".
std::string eval_protocol_text(int64_t stride);

/// Writes the record into `run_dir`/eval/ (created when missing) atomically (write_file_atomically) and returns the
/// file's path. Throws rpb::Error when `run_dir`/eval is a symbolic link (never followed) or not a folder.
std::string write_eval_record(const std::string& run_dir, const EvalRecord& record);

}  // namespace rpb
