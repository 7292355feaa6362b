// rpb/train/checkpoint/checkpoint.h: HDF5 checkpoints (parameters, optimizer, rng, counters, metrics), saved atomically.
// A run folder's `latest` pointer to its newest checkpoint is train/run/latest.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "nn/module.h"
#include "optim/optimizer.h"
#include "train/checkpoint/metrics_row.h"
#include "train/data/tokenizer.h"

namespace rpb {

/// The layout version written into every checkpoint (root attribute "format_version").
/// load_checkpoint refuses any other version.
inline constexpr int kCheckpointFormatVersion = 1;

/// What identifies the data a run trained on beyond its config (train/checkpoint/data_identity.h): the kjv task's text. The
/// generated tasks (markov, lag, grid2d) need none: their config and seed fix every token. Empty fields: not recorded
/// (a generated task, or a checkpoint written before rpb recorded them).
struct DataIdentity {
  std::string vocab;        // kjv: the characters (bytes) in id order; id i is vocab[i]
  std::string text_sha256;  // kjv: data::KjvTask::text_sha256 of the text the splits came from (64 hex digits);
                            // text: data::TextTask::text_sha256
  data::TokenizerRecord tokenizer;  // text: the tokenizer its ids come from (data/tokenizer.h); empty for kjv
  std::string path;         // where the text was read, for messages; not stored
  std::string path_key;     // what messages call `path` (TaskOptions::path_key: "task.path", "eval --data"), or
                            // "" for none (kjv); not stored
  bool empty() const { return vocab.empty() && text_sha256.empty() && tokenizer.empty(); }
};

/// Everything needed to resume a run, and what `rpb inspect`, h5dump and h5py show.
///
/// File layout (HDF5):
///   /                attributes format_version (int32), rpb_version, commit (optional on load: older files lack
///                    it), config, config_digest (optional), created (ISO 8601 UTC) (strings), step (int64)
///   /params/<path>   one dataset per parameter, named by its module path ("blocks.0.attn.qkv.weight")
///   /buffers/<path>  persistent buffers, likewise
///   /optim           attributes kind, groups (strings), step (int64), and one float64 attribute per hyper-parameter
///   /optim/<name>    optimizer tensors; "/" in a name nests groups ("exp_avg/blocks.0.attn.qkv.weight")
///   /rng/<name>      uint64 (4): a Generator::State
///   /state           one int64 attribute per counter (data cursor, the task's vocabulary "vocab", ...)
///   /metrics/{step,loss,lr,grad_norm,tokens_per_sec,elapsed_s}  1-D datasets, one entry per MetricsRow
///   /metrics/valid_loss@<length>  1-D float64, one per validation length, NaN where a row has none
///   /metrics/valid_accuracy@<length>  the same for a passkey run's validation accuracy (MetricsRow::valid_accuracy)
///                                 (elapsed_s and these are optional on load: older files lack them)
///   /data            kjv and text runs only (optional on load: older files and generated tasks lack it): attribute
///                    text_sha256 (string); kjv: dataset vocab, int64 [V], the byte of each id; text: attribute
///                    tokenizer (its kind, data/tokenizer.h) and dataset tokenizer_model, uint8 [n], its model
///                    (absent for bytes), parsed on load (DataIdentity)
/// Tensors keep their dtype (float32, float64, int64) and shape (0-D tensors are scalar dataspaces).
/// Every dataset carries a uint32 attribute "crc32" (CRC-32/IEEE of its raw bytes, train/checkpoint/crc32.h) checked on load.
/// Datasets are contiguous (compact ones load too), unfiltered and stored inside the file; every link is a
/// hard link and every object has one path. Strings are fixed-length, NUL-terminated UTF-8 (h5py reads them as
/// bytes; variable-length strings load too) of at most 1 MiB. Steps (root, /optim, /metrics/step) are >= 0.
///
/// Names and order: params, buffers, rng, counters and optim.scalars load back in the order they were
/// saved. optim.tensors load back grouped by their first path component (each group in the order its
/// members were saved), so look them up by name. Optim scalar names must not be "kind", "step" or "groups".
struct Checkpoint {
  int64_t step = 0;
  /// The TOML config, verbatim (root attribute "config").
  std::string config_text;
  /// The digest of the config's identity (train/config/run_identity.h config_digest), root attribute "config_digest":
  /// written when not empty, empty when the file has none (checkpoints written before digests).
  std::string config_digest;
  /// Root attribute "rpb_version"; save_checkpoint fills in rpb::version() when empty.
  std::string library_version;
  /// Root attribute "commit": the git commit of the rpb that wrote the file (train/io/version.h build_commit);
  /// save_checkpoint fills in build_commit() when empty; "" when read from a file written before rpb recorded it.
  std::string commit;
  nn::NamedTensors params;
  /// Persistent buffers only.
  nn::NamedTensors buffers;
  /// The optimizer's state as it hands it over: kind, step, moments (/optim/<slot>/<module path>),
  /// hyper-parameters and the group text.
  optim::OptimizerState optim;
  std::vector<std::pair<std::string, Generator::State>> rng;
  std::vector<std::pair<std::string, int64_t>> counters;
  std::vector<MetricsRow> metrics;
  /// The SHA-256 (hex) of the file's bytes as load_checkpoint read them, the bytes it decoded: what an evaluation
  /// record names (no second read of the path, which another file could have replaced). Filled only when asked for
  /// (FileDigest::sha256); not saved; empty otherwise and for a checkpoint not read from a file.
  std::string file_sha256;
  /// The identity of the run's data (/data); empty when the file records none.
  DataIdentity data;
};

/// Whether save_checkpoint and load_checkpoint hash the bytes they write or read (SHA-256, train/io/sha256.h): only
/// what an evaluation record names needs it, and a large checkpoint takes a while to hash.
enum class FileDigest {
  none,    // no digest
  sha256,  // the SHA-256 (hex) of the file's bytes
};

/// Writes `c` to `path` atomically: into ".<name>.tmp.<pid>" in the same folder, flushed, fsynced,
/// renamed over `path`, then the folder is fsynced. On any failure the temp file is removed, an
/// existing file at `path` is left untouched and rpb::Error is thrown naming the file. Refuses a string
/// (the config, ...) over 1 MiB, which load_checkpoint would refuse. Returns, with FileDigest::sha256, the SHA-256
/// (hex) of the bytes written (what Checkpoint::file_sha256 of the file reads back); else "".
std::string save_checkpoint(const std::string& path, const Checkpoint& c, FileDigest digest = FileDigest::none);

/// The most bytes load_checkpoint reads when no memory limit is set (train/config/memory.h memory_budget).
inline constexpr std::size_t kMaxCheckpointBytes = std::size_t{16} << 30;

/// Reads a checkpoint written by save_checkpoint. Throws rpb::Error naming the file (and the dataset,
/// where one is at fault) when the file is missing, not a regular file, unreadable, larger than the memory limit,
/// truncated, not HDF5, of another format version, fails a CRC check or holds an unsupported dtype. Never prints
/// HDF5's own diagnostics. The file is read once, whole, and those bytes are decoded in memory (an HDF5 file image):
/// nothing can swap the file between a check and the read. It is read through train/io/input_file.h
/// read_input_file: opened once, non-blocking, refused unless a regular file ("checkpoint <path>: is a FIFO, not a
/// regular file"), the system's reason when it cannot be opened or read ("cannot open the file: Permission
/// denied"), and read up to the memory limit (or kMaxCheckpointBytes without one), a larger file refused naming the
/// bound. `in_run_folder`: a checkpoint of a run folder, refused on the same descriptor when it is a symbolic link or
/// has another hard link (InputOptions::in_run_folder), so no file swapped in after an earlier check is read.
/// With FileDigest::sha256 the bytes decoded are hashed into Checkpoint::file_sha256.
///
/// The file is untrusted input (checkpoints are shared): reading it has no side effects and reads
/// nothing outside it. Refused, by name: soft, external and user-defined links; an object reached by
/// two paths (a hard-link cycle or a shared object); virtual datasets, external raw storage, chunked or
/// filtered datasets; a dataset whose stored bytes are not exactly what its shape declares, or lie past
/// the end of the file (checked before any buffer is allocated); string attributes over 1 MiB; negative
/// steps. Names from the file appear in messages through rpb::printable().
Checkpoint load_checkpoint(const std::string& path, bool in_run_folder = false, FileDigest digest = FileDigest::none);

/// Checks c.params against what a model expects (`expected`: names, shapes and dtypes; the values are
/// ignored): every expected name must exist with that shape and dtype, and the file must hold no
/// parameter the model lacks. The error lists every problem (the first 20), each naming the file
/// `path` and the dataset, e.g. "checkpoint run/step_000100.h5: dataset /params/x: expected shape
/// [2, 3] float32, found [3, 2] float32".
void check_params(const Checkpoint& c, const nn::NamedTensors& expected, const std::string& path);

/// Puts c.params and c.buffers into `model` (no gradient is recorded), after check_params(c,
/// model.named_parameters(), path); buffers are matched by name.
void load_parameters(const Checkpoint& c, nn::Module& model, const std::string& path);

}  // namespace rpb
