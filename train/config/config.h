// rpb/train/config/config.h: run configuration from TOML files (configs/*.toml).
//
// Every key is checked: an unknown key (with a did-you-mean), a wrong type or an
// out-of-range value is an error naming the file, line, key and value. Integers are
// accepted where a float is expected (the widening is exact); nothing else is coerced.
// Every size has an upper bound (run_limits below, nn/limits.h), and the longest evaluation
// length is checked against the held-out stream before anything is built. Quoted values are
// escaped and cut (core/text.h printable()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/enum_names.h"
#include "nn/grid_model.h"
#include "nn/transformer.h"
#include "optim/adam.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/data/task.h"
#include "train/data/task_options.h"

namespace rpb {

/// The largest values of the run's own sizes ([run], [task], optim.warmup_steps) and the longest lists ([sweep], the
/// evaluation lengths; a list holds each value once); the model's and the position scheme's are in nn/limits.h. Like
/// those, they guard against overflow and nonsense, not against running out of memory: a run inside every limit builds
/// no tensor of more than 2^58 elements.
namespace run_limits {
inline constexpr int64_t kMaxSteps = int64_t{1} << 40;   // run.steps, log_every, checkpoint_every, eval_every,
                                                         // optim.warmup_steps
inline constexpr int64_t kMaxBatch = int64_t{1} << 16;   // run.batch, run.eval_batch: sequences per forward
inline constexpr int64_t kMaxTokens = int64_t{1} << 32;  // task.train_tokens, task.eval_tokens, run.eval_tokens,
                                                         // run.valid_tokens
inline constexpr int64_t kMaxMultiplier = 1024;          // each of run.eval_multipliers and run.valid_multipliers
inline constexpr std::size_t kMaxLengths = 64;           // lengths per evaluation: run.eval_multipliers,
                                                         // run.valid_multipliers, eval --lengths
inline constexpr std::size_t kMaxSweepMethods = 256;     // sweep.methods, and each [[sweep.grid]]'s methods
inline constexpr std::size_t kMaxSweepGrids = 64;        // [[sweep.grid]] tables
inline constexpr std::size_t kMaxSweepSeeds = 1000;      // sweep.seeds
inline constexpr std::size_t kMaxLabelBytes = 200;       // a value of sweep.labels, sweep.task_labels
inline constexpr std::size_t kMaxSweepRuns = 4096;       // methods x tasks x seeds: the runs of one sweep
inline constexpr int64_t kMaxVocab = int64_t{1} << 16;   // task.vocab
inline constexpr std::size_t kMaxNameBytes = 200;        // run.name, a sweep method: one path component (NAME_MAX
                                                         // 255 less what move_run_aside and temp files add)
inline constexpr std::size_t kMaxPathBytes = 4096;       // run.out_dir, task.kjv_path
}  // namespace run_limits

/// optim.kind.
enum class OptimizerKind {
  adamw,  // Adam with decoupled weight decay (default weight_decay 0.01)
  adam,   // Adam with L2 weight decay added to the gradient (default weight_decay 0)
  sgd     // SGD with momentum
};
/// optim.kind's names: "adamw", "adam", "sgd".
inline constexpr EnumName<OptimizerKind> kOptimizerKindNames[] = {
    {OptimizerKind::adamw, "adamw"}, {OptimizerKind::adam, "adam"}, {OptimizerKind::sgd, "sgd"}};

/// model.gelu's names: "tanh", "erf".
inline constexpr EnumName<GeluApprox> kGeluApproxNames[] = {{GeluApprox::tanh, "tanh"}, {GeluApprox::erf, "erf"}};

/// run.on_nonfinite: what a non-finite loss or gradient does.
enum class OnNonFinite {
  stop,  // the run stops (rpb train exits non-zero); the last checkpoint stays
  skip   // the step is skipped: parameters and optimizer state stay as they were
};
/// run.on_nonfinite's names: "stop", "skip".
inline constexpr EnumName<OnNonFinite> kOnNonFiniteNames[] = {{OnNonFinite::stop, "stop"}, {OnNonFinite::skip, "skip"}};

/// run.device's names: "cpu", "cuda" (core/device.h).
inline constexpr EnumName<Device> kDeviceNames[] = {{Device::cpu, "cpu"}, {Device::cuda, "cuda"}};

struct OptimConfig {
  OptimizerKind kind = OptimizerKind::adamw;
  optim::AdamOptions adam;
  optim::SGDOptions sgd;
  optim::ScheduleOptions schedule;  // holds the base lr
  double grad_clip = 1.0;           // global-norm clipping; 0 disables
  int64_t total_steps = 0;          // optim.total_steps as set; 0 follows run.steps (schedule.total_steps: resolved)
};

/// The 2-D grid model's windows ([grid]); task.kind = "grid2d" trains a GridModel on side x side grids
/// (run.length is the side) with position.scheme one of nn::scheme_names(2). [grid] max_side is the learned2d
/// table's side (model.position.max_side).
struct GridConfig : nn::WindowOptions {
  int64_t eval_window = 0;  // swin, swin_v2: window used for evaluation (0: the trained one)
};

/// A typed value for a config key, set from outside the config's document (a sweep method's setting, the horizon
/// match_run keeps): a TOML boolean, integer, float or string, or an array of them.
struct SettingValue {
  std::variant<bool, int64_t, double, std::string, std::vector<SettingValue>> value;
};

/// `v` as a sweep method writes it after "<key>=": TOML's text (toml_config::value_text: floats in their shortest
/// form, 0.001 not 1e-3; arrays "[1, 2]"), a string bare when --set reads the bare word back as the same string
/// ("nearest"), else quoted. What a [[sweep.grid]] point's name and a results.json reader's settings show.
std::string setting_text(const SettingValue& v);

/// One config key set to a typed value, read and validated by the schema like a key of the file.
struct ConfigSetting {
  std::string key;     // dotted: "position.max_distance"
  SettingValue value;  // 64
  std::string text;    // the value as written ("1e-3"): what labels show
};

/// One method of a sweep: a position scheme and the config keys it sets for its runs, written
/// "<scheme>[@<setting>]...":
///   "t5"                        the scheme, with the config's keys as they are
///   "t5@max_distance=64"        position.max_distance = 64 (a key without a dot is one of [position])
///   "t5@untrained=nearest"      position.untrained = "nearest" (values as --set takes them: TOML, a bare word is a
///                               string; a table or a date is refused)
///   "sinusoidal@optim.lr=1e-3"  any dotted key: a method's own learning rate or warm-up
///   "swin_v2@window8"           grid.eval_window = 8
/// The settings are parsed when the config is read; their keys and values are checked when the sweep's run configs
/// are made (run_config). Evaluation keys (run_identity.h's non_identity_keys: position.untrained, grid.eval_window,
/// run.eval_stride, the rope scaling keys, ...) never give a method runs of its own: it evaluates the runs of the
/// method without them (the scheme's for "t5@untrained=nearest"; "xpos@xpos_scale_base=32@blockwise=true" evaluates
/// those of "xpos@xpos_scale_base=32"), so a method trains runs of its own only when it sets another key; a
/// fine-tune (run.init_from) always has its own.
struct SweepMethod {
  std::string text;                     // as written: its name in results and its run folder
  std::string scheme;                   // a registered scheme of the task's dims
  std::vector<ConfigSetting> settings;  // {position.max_distance, 64}, in the order written
  /// As written in configs and results ("swin_v2@window8").
  std::string name() const { return text; }
  /// Its default label in result tables and figures: the scheme's label, then its settings in order
  /// ("Swin V2 continuous (windows), eval window 8"; "T5 bias, max_distance 64"). A RoPE scaling is named with every
  /// parameter in force, defaulted ones included: "RoPE + YaRN (s = 16)", its factor position.rope_factor or, when
  /// that is 0 or unset, `largest_multiplier` (the largest evaluation multiplier, what the evaluation uses; left out
  /// when 0), and the yarn_* keys set; "xPos + blockwise" for position.blockwise = true. A sweep's [sweep] labels
  /// replace it (SweepConfig::labels).
  std::string label(int64_t largest_multiplier = 0) const;
  /// Its text split at every '@': the scheme, then one segment per setting, in order ("t5@max_distance=64" ->
  /// {"t5", "max_distance=64"}; "swin_v2@window8" -> {"swin_v2", "window8"}).
  std::vector<std::string> segments() const;
  /// The setting that makes it a fine-tune (the key whose row names a fine-tune's parent checkpoint, run.init_from;
  /// here the method whose run it continues: "rope@...@run.init_from=rope"); null for a method trained from scratch.
  const ConfigSetting* parent() const;
  ConfigSetting* parent();
};

/// The setting that pins a fine-tune to its parent checkpoint's SHA-256 (run.init_sha256 = `sha256`).
ConfigSetting parent_pin(const std::string& sha256);

/// What `rpb extrapolate` sweeps: each method x task x seed is one run.
///
/// A [[sweep.grid]] table names methods and, for each key it sweeps, a list of values:
///   [[sweep.grid]]
///   methods = ["t5"]
///   "optim.lr" = [1e-3, 3e-3]         (quoted: a dotted key; optim.lr = [...] unquoted reads the same)
///   max_distance = [64, 128]          (a key without a dot is one of [position], as in a method's settings)
/// and adds the cartesian product of its methods and values to `methods`, after sweep.methods, one method per point
/// named as it would be written by hand, the keys in sorted order: "t5@max_distance=64@optim.lr=0.001", ... (values
/// as setting_text writes them), so a grid point and the same hand-written method share their runs. A grid refuses a
/// key that one of its methods does not read (nn/position/options.h; [grid]'s window keys only the window schemes
/// read), a key the sweep sets itself (position.scheme, task.kind, run.seed, run.name, run.out_dir), an unknown key,
/// an empty list, a value listed twice, and a point equal to another method; with grids, sweep.methods defaults to
/// none, and methods x tasks x seeds stays within run_limits::kMaxSweepRuns.
struct SweepConfig {
  std::vector<SweepMethod> methods;  // sweep.methods then each grid's points; default: every scheme of the tasks' dims
  std::vector<uint64_t> seeds = {0};
  std::vector<std::string> tasks;  // task kinds; empty: the [task] table's kind only
  /// The formats of the sweep's figures (results.<format> beside results.json, drawn by python/rpb_plot/): "svg",
  /// "pdf", "png". sweep.figures = false: none; true or absent: svg and pdf.
  std::vector<std::string> figures = {"svg", "pdf"};
  /// [sweep] labels = { "rope@rope_scaling=yarn" = "RoPE + YaRN" }: a method's name in the tables, results.csv,
  /// results.json, results.tex and the figures, instead of its default label (SweepMethod::label). Keys are methods
  /// of the sweep; a value is 1 to kMaxLabelBytes bytes of printable text.
  std::map<std::string, std::string> labels;
  /// [sweep] task_labels = { passkey_text = "Passkey retrieval (KJV filler)" }: a task's name in the tables' task
  /// lines, results.tex's captions and the figures' titles, instead of its default (task_label, train/sweep/labels.h).
  std::map<std::string, std::string> task_labels;
  /// [sweep] learned_threshold (0, 1]: a passkey seed whose accuracy at the train length reaches it has learned the
  /// task (learned_seeds, train/sweep/sweep.h); past the train length the tables count those seeds only. Default
  /// kLearnedAccuracy (0.95); a pilot with a short budget may set it lower, and the tables say which one it used.
  double learned_threshold = 0.95;
};

/// A [sweep] table as the config wrote it (train/config/document.h; opaque here so that this header does not
/// include toml++).
struct SweepTable;

struct RunConfig {
  std::string name = "run";          // run folder: <out_dir>/<name>
  std::string out_dir = "checkpoints";
  uint64_t seed = 0;                 // model init, dropout and batch order
  int64_t steps = 1000;
  int64_t batch = 32;
  int64_t length = 64;               // train length L
  int64_t log_every = 50;
  int64_t checkpoint_every = 0;      // 0: only the final checkpoint
  std::vector<int64_t> eval_multipliers = {1, 2, 4, 8, 16};
  int64_t eval_tokens = 16384;       // held-out target tokens scored at every length
  int64_t eval_batch = 8;            // segments per evaluation forward
  int64_t eval_every = 0;            // validation every this many steps and at the last one; 0: none
  bool eval_diagnostics = true;      // test evaluations also measure attention distance and entropy per head
  /// Test evaluations: 0 scores nonoverlapping segments of each length; S >= 1 sliding windows of the length advanced
  /// by S, each scoring its last S targets (data::EvalWindows). Validation stays nonoverlapping. Written into the
  /// effective config only when set (a config without it keeps its stored text).
  int64_t eval_stride = 0;
  /// A fine-tune: the checkpoint whose parameters (and persistent buffers) the run starts from, at step 0 with a
  /// fresh optimizer (`rpb train --init-from`; in a sweep, the name of the method whose run of the same task and seed
  /// it continues). Weights only: unlike --resume, the run has its own folder and identity. A path, not part of the
  /// identity; init_sha256 is. Written into the effective config only when set, as are the two below.
  std::string init_from;
  /// The SHA-256 (hex) of init_from's bytes: filled in by Run when absent, checked against the file when given (a
  /// fine-tune pinned to its parent). Part of the run's identity: a resumed fine-tune needs the same parent.
  std::string init_sha256;
  /// A fine-tune's training length (token tasks); 0: run.length. run.length stays the parent's training length,
  /// which evaluation and validation lengths (multipliers of it) and the schemes' L0 (rope scaling, fire) are
  /// relative to, so a fine-tune's table has the same columns as its parent's.
  int64_t finetune_length = 0;
  std::vector<int64_t> valid_multipliers = {1};  // validation lengths, as multiples of run.length
  int64_t valid_tokens = 4096;       // valid-split target tokens scored at every validation length
  OnNonFinite on_nonfinite = OnNonFinite::stop;  // a non-finite loss or gradient stops the run or skips the step
  /// Where the model trains and evaluates (docs/gpu.md): "cuda" needs a CUDA build and a GPU (or the emulated
  /// backend, RPB_CUDA_EMULATE=1). Not part of the identity: a run may continue on the other device, and its
  /// checkpoints are the same files. Written into the effective config only when set to cuda.
  Device device = Device::cpu;

  nn::TransformerOptions model;      // [model] and [position]
  data::TaskOptions task;            // [task]
  GridConfig grid;                   // [grid]
  OptimConfig optim;                 // [optim] and [[optim.group]]
  SweepConfig sweep;                 // [sweep]

  std::string source;                // the file it came from ("<string>" when parsed from text)
  /// The effective configuration as TOML (stored in checkpoints and in the run folder's config.toml): every key the
  /// parser accepts for this run's task and scheme, with its value (defaults filled in, overrides applied), in a
  /// fixed layout (toml_config::document_text), written from the typed values (train/config/config_keys.h
  /// write_effective); the [sweep] table as written. Parsing it gives the same RunConfig.
  std::string text;
  /// The [sweep] table as written, which `text` holds and configs derived from this one (derive_config,
  /// run_config) carry; null when the config has none.
  std::shared_ptr<const SweepTable> sweep_table;

  /// The run folder: <out_dir>/<name>.
  std::string run_dir() const;
  /// The number of dims of the task's grid: 2 for grid2d, 1 for the token tasks.
  int64_t dims() const { return data::task_dims(task.kind); }
  /// The length training batches have: finetune_length when set, else length.
  int64_t train_length() const { return finetune_length > 0 ? finetune_length : length; }
  /// The validation lengths (valid_multipliers x length); empty when eval_every is 0.
  std::vector<int64_t> valid_lengths() const;
  /// The options of the model's position scheme (nn::position_options_for with the task's dims).
  nn::PositionOptions position() const { return nn::position_options_for(model, dims()); }
  /// The embedding recipe the model is built with: model.embedding, with "scheme" resolved for the position scheme
  /// (nn::resolve_recipe).
  nn::EmbeddingRecipe embedding_recipe() const;
};

/// What one run of a sweep changes in the sweep's config.
struct SweepRun {
  std::string task;     // task.kind
  SweepMethod method;   // position.scheme and grid.eval_window
  uint64_t seed = 0;    // run.seed
  std::string out_dir;  // run.out_dir
  std::string name;     // run.name
};

/// `base` with `settings` applied: each key set to its typed value, read and checked as a file's key is (its type,
/// its bounds), then the checks across keys run on the whole typed config, as for a file; nothing of `base` is read
/// again. Errors about a setting name `origin` ("sweep method \"t5@max_distance=64\""), and about a key of `base`
/// its source.
RunConfig derive_config(const RunConfig& base, const std::vector<ConfigSetting>& settings, const std::string& origin);

/// The config of one sweep run: `sweep` with the run's keys and its method's settings set to typed values
/// (derive_config; so its text, stored in checkpoints, is the sweep's text with those keys).
RunConfig run_config(const RunConfig& sweep, const SweepRun& run);

/// Every dotted key the parser reads for the config `text` (its task and scheme), the [sweep] table aside: the keys
/// RunConfig::text holds ("optim.group.<key>" for the keys of each [[optim.group]]).
std::vector<std::string> accepted_keys(const std::string& text, const std::string& source);

/// A key added after runs were stored without it, whose default would change what such a run trains. A stored
/// config (parse_stored_config, run identities) that lacks it reads as `value`: what every run did before the key
/// existed.
struct LegacyKey {
  const char* table;  // "model"
  const char* key;    // "embedding"
  const char* value;  // "gpt2"
};
const std::vector<LegacyKey>& legacy_keys();

/// A config that rpb stored (a checkpoint's `config` attribute, a run folder's config.toml), read as the run it
/// describes: like parse_config, with each missing legacy_keys() entry set to its old value.
RunConfig parse_stored_config(const std::string& text, const std::string& source);

/// How often this process has turned config text into a TOML document (parse_config, parse_stored_config,
/// accepted_keys: one parse per text they are given), a whole document into a typed RunConfig (the same calls: one
/// per text), and derived a typed config from another with settings (derive_config, run_config: no document read).
/// Tests hold the readers to one text parse and one document read per file read (tests/test_finetune.cpp).
struct ConfigReads {
  int64_t texts = 0;
  int64_t documents = 0;
  int64_t derived = 0;
};
ConfigReads config_reads();

/// The largest config file rpb reads (configs are a few KiB).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;

/// Config keys a command-line flag sets (`rpb train --init-from F` sets run.init_from): applied after the --set
/// overrides, so the file is read and validated with them as one config (a run.init_sha256 in the file is checked
/// against the run.init_from the flag gives), and messages about them name `origin` ("--init-from").
struct FlagSettings {
  std::vector<ConfigSetting> settings;
  std::string origin;
};

/// Reads and validates a config file; `overrides` are "key=value" strings (dotted keys,
/// TOML values: --set model.d_model=256 --set position.scheme="alibi"), then `flags` set their keys. The file is read
/// through train/io/input_file.h read_input_file (a FIFO, a device or a folder is refused, and so is a file of more
/// than kMaxConfigBytes), and its nesting is bounded (train/config/toml_depth.h) before it is parsed.
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                      const FlagSettings& flags = {});

/// The same from text; `source` names it in error messages.
RunConfig parse_config(const std::string& text, const std::string& source,
                       const std::vector<std::string>& overrides = {}, const FlagSettings& flags = {});

}  // namespace rpb
