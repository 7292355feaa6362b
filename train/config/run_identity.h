// rpb/train/config/run_identity.h: a run is its config. The identity of a run is the part of its effective config
// (RunConfig::text) that changes the trained weights; `train --resume` and `extrapolate` continue or reuse a
// run folder only when the identity of the config they are given equals the one the folder was trained with.
//
// Identity: every key of the effective config except the ones in non_identity_keys(), i.e. [model], [position]
// (but position.untrained and position.blockwise, read only by evaluation, and the rope scaling keys
// position.rope_scaling, rope_factor and yarn_*, evaluation settings of a rope run unless it is a fine-tune, which
// trains with them), [task] (but task.kjv_path), [grid] (but grid.eval_window), [optim] with each [[optim.group]],
// and run.seed, run.steps, run.batch, run.length, run.on_nonfinite, and a fine-tune's run.init_sha256 (the parent's
// bytes; run.init_from, its path, is not) and run.finetune_length. optim.total_steps counts as the cosine horizon it resolves
// to (0 reads as run.steps), so a run extended with `train --extend` stays coherent when resumed again;
// model.embedding = "scheme" counts as the recipe it resolves to for the scheme, and a stored config without a key
// of legacy_keys() (train/config/config.h) as that key's old value, so a run trained before a recipe changed is not
// today's run.
//
// Identities are computed from the typed config (its values as the key rows write them, train/config/config_keys.h
// write_effective, and its resolved values), never from text: a stored config is read once, by
// parse_stored_config. A key added later counts only when set away from its
// default (added_identity_keys), so it never changes the digest of a run that does not set it.
//
// The digest (config_digest) is recorded in the run folder's config.toml (first line) and in each checkpoint
// (root attribute config_digest) for people and tools; comparisons recompute it from the stored config,
// so folders written before digests, whose configs lack keys (today's defaults apply), compare too.
#pragma once

#include <string>
#include <vector>

#include "train/config/config.h"

namespace rpb {

/// The keys that are not part of a run's identity: how a run is named, stored, logged and evaluated, and the
/// sweep ("sweep" is the whole [sweep] table), from the keys' rows (train/config/config_keys.h KeyRole, and the
/// position options' OptionRole). The one list: digests, comparisons and messages use it.
const std::vector<std::string>& non_identity_keys();
/// The keys of non_identity_keys() that are part of a fine-tune's identity (run.init_from), which trains with them:
/// the position options of role fine_tune (nn/position/options.h; the rope scaling keys).
bool trains_in_fine_tune(const std::string& key);

/// A key added to the identity after it froze (after runs were stored without it): it counts in a run's identity
/// only when its value differs from `unset`, the value that trains what runs did before the key existed. A stored
/// config without it reads as its default (parse_stored_config), so every digest of before the key stays as it
/// was. A key whose default changes what runs train instead is a legacy key (config.h legacy_keys()).
struct AddedKey {
  const char* key;    // dotted: "model.new_option"
  const char* unset;  // its value as TOML writes it (toml_config::value_text): "false", "0", "\"none\""
};
/// Every AddedKey, in the order they were added (none: a position option added later is dropped from the
/// effective config at its default instead, PositionOptionInfo::added).
const std::vector<AddedKey>& added_identity_keys();

/// The identity of a config (read by the readers: load_config, parse_config, parse_stored_config, run_config), as
/// a canonical TOML document: its effective config without the non-identity keys, nor the `added` keys left at
/// their `unset` value, with model.embedding as the recipe it resolves to (RunConfig::embedding_recipe) and
/// optim.total_steps as the horizon it resolves to (0 reads as run.steps), in toml_config::document_text's layout.
std::string identity_text(const RunConfig& config, const std::vector<AddedKey>& added = added_identity_keys());

/// The SHA-256 (64 hex digits) of identity_text(config): equal for configs that train the same weights, whatever
/// their key order, spacing, comments or non-identity keys.
std::string config_digest(const RunConfig& config);

/// The first line of a run folder's config.toml: "# config_digest = <hex> (...)".
std::string digest_line(const RunConfig& config);

/// One identity key whose value differs between two configs (values as TOML writes them; "(none)" when absent).
struct ConfigChange {
  std::string key, before, after;
  /// "optim.lr: 0.001 -> 0.01".
  std::string line() const { return key + ": " + before + " -> " + after; }
};

/// The identity keys whose values differ between two configs, in key order; optim.total_steps left at 0 in both
/// (following run.steps) is not named beside run.steps.
std::vector<ConfigChange> identity_changes(const RunConfig& before, const RunConfig& after);

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

/// Compares `config` with `stored` (the config text of checkpoint `file`, of any rpb version, read by
/// parse_stored_config). With `extend`
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
