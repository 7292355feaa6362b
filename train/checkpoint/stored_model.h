// rpb/train/checkpoint/stored_model.h: the model a checkpoint's stored config describes, checked against the checkpoint before it
// is built.
//
// A checkpoint is untrusted input: its `config` attribute could describe a model of any size. These functions compare
// what the config implies with what the file holds (counting parameters without building anything) and build only the
// model, never the task's data, so reading a checkpoint has no side effects.
#pragma once

#include <memory>
#include <string>

#include "nn/module.h"
#include "train/checkpoint/checkpoint.h"
#include "train/config/config.h"

namespace rpb {

/// A checkpoint file read with the config stored in it (what `rpb eval`, `generate` and `inspect` start from).
struct StoredCheckpoint {
  Checkpoint checkpoint;
  RunConfig config;     // parse_stored_config of checkpoint.config_text, its messages naming "<file> (stored config)"
  std::string file;     // the checkpoint file read
  std::string digest;   // the digest of `config` (train/config/run_identity.h config_digest), recomputed on reading
  /// Whether the checkpoint records a config_digest other than `digest`: its stored config was edited after the
  /// file was written (a checkpoint of before digests records none, and is not).
  bool edited() const { return !checkpoint.config_digest.empty() && checkpoint.config_digest != digest; }
};

/// load_checkpoint(file, in_run_folder, digest), then its stored config parsed (parse_stored_config) and its digest
/// recomputed. Throws what either throws.
StoredCheckpoint read_stored_checkpoint(const std::string& file, bool in_run_folder = false,
                                        FileDigest digest = FileDigest::none);

/// What `rpb inspect`, `eval` and `generate` warn of when s.edited(): "<file>: the stored config_digest <recorded>
/// differs from the digest of the stored config <digest>: the config was edited after the checkpoint was written
/// (<what reads it>)".
std::string edited_config_warning(const StoredCheckpoint& s);

/// The vocabulary of the model in `c`: its /state counter "vocab" (written since format version 1 gained it), else the
/// one `config` fixes (markov, lag, grid2d), else (older kjv checkpoints) the one for which the config's model has
/// exactly as many parameters as the file holds. Throws rpb::Error naming `file` when none fits.
int64_t checkpoint_vocab(const Checkpoint& c, const RunConfig& config, const std::string& file);

/// Throws rpb::Error "checkpoint <file>: step S is outside [0, run.steps = N] (...)" unless c.step lies in
/// [0, config.steps]: what `train --resume`, `eval` and `inspect` ask of a checkpoint's step.
void check_checkpoint_step(const Checkpoint& c, const RunConfig& config, const std::string& file);

/// Throws rpb::Error naming `file` unless c.step lies in [0, run.steps] (check_checkpoint_step), `config`'s model for `vocab` is within
/// reach of the parameters c.params holds (at most twice as many, plus 2^20): "the stored config describes a model of N
/// parameters (...), far more than the M the file holds", and, for a task that stores its tokenizer (text,
/// passkey_text), the stored tokenizer's ids (plus the 12 passkey_text adds) are the rows of the embedding
/// /params/tok.weight: "the stored tokenizer (/data/tokenizer_model) has N ids, but the model's embedding
/// (/params/tok.weight) has M rows". Builds nothing; a model that passes is small enough to build, and check_params
/// then names every parameter that differs.
void check_stored_model(const Checkpoint& c, const RunConfig& config, int64_t vocab, const std::string& file);

/// The stored config's model for `vocab` with the checkpoint's parameters and buffers loaded (after check_params), in
/// evaluation mode (its forwards change no buffer: a table scheme marks no row as trained). Call it once
/// check_stored_model(c, config, vocab, file) has passed, with `vocab` = checkpoint_vocab(c, config, file): it builds
/// the model those allow. Reads and writes no file.
std::unique_ptr<nn::Module> load_stored_model(const Checkpoint& c, const RunConfig& config, int64_t vocab,
                                              const std::string& file);

}  // namespace rpb
