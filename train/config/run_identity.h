// rpb/train/config/run_identity.h: a run is its config. The identity of a run is the part of its effective config
// (RunConfig::text) that changes the trained weights; `train --resume` and `extrapolate` continue or reuse a
// run folder only when the identity of the config they are given equals the one the folder was trained with.
//
// Identity: every key of the effective config except the ones in non_identity_keys(), i.e. [model], [position]
// (but position.untrained, read only by evaluation), [task] (but task.kjv_path), [grid] (but grid.eval_window), [optim] with each [[optim.group]], and run.seed,
// run.steps, run.batch, run.length, run.on_nonfinite. optim.total_steps counts as the cosine horizon it resolves
// to (0 reads as run.steps), so a run extended with `train --extend` stays coherent when resumed again;
// model.embedding = "scheme" counts as the recipe it resolves to for the scheme, and a stored config without a key
// of legacy_keys() (train/config/config.h) as that key's old value, so a run trained before a recipe changed is not
// today's run.
//
// The digest (config_digest) is recorded in the run folder's config.toml (first line) and in each checkpoint
// (root attribute config_digest) for people and tools; comparisons recompute it from the stored config text,
// so folders written before digests, whose configs lack keys (today's defaults apply), compare too.
#pragma once

#include <string>
#include <vector>

#include "train/config/config.h"

namespace rpb {

/// The keys that are not part of a run's identity: how a run is named, stored, logged and evaluated, and the
/// sweep ("sweep" is the whole [sweep] table). The one list: digests, comparisons and messages use it.
const std::vector<std::string>& non_identity_keys();

/// The identity of an effective config text (RunConfig::text), as a canonical TOML document: the text without
/// the non-identity keys, optim.total_steps resolved, in toml_config::document_text's layout.
std::string identity_text(const std::string& effective_text);

/// The SHA-256 (64 hex digits) of identity_text(effective_text): equal for configs that train the same weights,
/// whatever their key order, spacing, comments or non-identity keys.
std::string config_digest(const std::string& effective_text);
/// The same for a config: of its effective config.
std::string identity_text(const RunConfig& config);
std::string config_digest(const RunConfig& config);
std::vector<struct ConfigChange> identity_changes(const RunConfig& before, const RunConfig& after);

/// The first line of a run folder's config.toml: "# config_digest = <hex> (...)".
std::string digest_line(const std::string& effective_text);

/// One identity key whose value differs between two configs (values as TOML writes them; "(none)" when absent).
struct ConfigChange {
  std::string key, before, after;
  /// "optim.lr: 0.001 -> 0.01".
  std::string line() const { return key + ": " + before + " -> " + after; }
};

/// The identity keys whose values differ between two effective config texts, in key order.
std::vector<ConfigChange> identity_changes(const std::string& before, const std::string& after);

/// What a run folder's stored config says about training the run with `config`.
struct RunMatch {
  /// `config` as the run continues with it: the stored optim.total_steps when the run was extended before and
  /// `config` leaves it at 0; with extend and another run.steps, the stored horizon (the steps the run's schedule
  /// was started with).
  RunConfig config;
  /// The identity keys that differ (run.steps aside when extending): empty when the run may go on.
  std::vector<ConfigChange> changes;
  /// Whether run.steps differs and extend allowed it.
  bool extended = false;
  /// The stored config's run.steps.
  int64_t stored_steps = 0;
};

/// Compares `config` with `stored` (the config text of checkpoint `file`, of any rpb version). With `extend`
/// (`train --extend`), run.steps may differ: the learning-rate schedule keeps the stored horizon.
RunMatch match_run(const std::string& stored, const std::string& file, const RunConfig& config, bool extend);

/// The message refusing a run whose config changed: "<op>: the config differs from the one <file> was trained
/// with:" and each change on its own line, then what to do (--extend when only run.steps grew and `op` is
/// train; a new run.name; --overwrite, which moves `run_dir` aside).
std::string changed_config_message(const std::string& op, const std::string& run_dir, const std::string& file,
                                   const std::vector<ConfigChange>& changes);

/// The line `train --extend` logs: from which steps to which, and what the learning rate does.
std::string extend_note(const RunConfig& config, int64_t from_steps);

}  // namespace rpb
