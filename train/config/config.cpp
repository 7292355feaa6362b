// rpb/train/config/config.cpp: the run config's schema, one reader per TOML table ([run], [model], [task], [grid],
// [position], [sweep]; [optim] with [[optim.group]] in config_optim.cpp), on top of train/config/toml_table.h; the
// checks across tables once all are read are config_checks.cpp's (train/config/config_detail.h).
#include "train/config/config.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "core/text.h"
#include "core/unicode.h"
#include "nn/limits.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "train/config/config_detail.h"
#include "train/config/config_keys.h"
#include "train/config/document.h"
#include "train/config/toml_depth.h"
#include "train/config/toml_table.h"
#include "train/data/passkey.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"
#include "train/io/input_file.h"
#include "train/io/sha256.h"

namespace rpb {

namespace fs = std::filesystem;
using toml_config::OverrideMap;
using toml_config::Table;
namespace L = nn::limits;
using namespace run_limits;
using namespace config_detail;

// What makes `v` unfit for a path in the run's file system ("a control character (U+001B)", "a format character
// (U+202E, category Cf)", "300 bytes"), or "": a `component` (run.name) is one folder name; any value is valid
// UTF-8 free of controls (NUL included) and of format and separator characters (core/unicode.h), and at most
// `max_bytes` long.
std::string path_problem(const std::string& v, std::size_t max_bytes, bool component) {
  if (std::string p = name_character_problem(v); !p.empty()) return p;
  if (v.size() > max_bytes) return std::to_string(v.size()) + " bytes";
  if (!component) return "";
  if (v.empty()) return "an empty name";
  if (v.find('/') != std::string::npos) return "a '/'";
  if (v == "." || v == "..") return "'" + v + "'";
  return "";
}

namespace {

// The fine-tune keys (run.init_from, run.init_sha256, run.finetune_length) together.
void check_finetune(const Table& run, const RunConfig& c) {
  if (!c.init_sha256.empty() && !is_sha256_hex(c.init_sha256))
    run.fail_at("init_sha256", "expected 64 lowercase hexadecimal digits (the SHA-256 of run.init_from's bytes), found \"" +
                                   printable(c.init_sha256) + "\"");
  if (c.init_from.empty()) {
    if (!c.init_sha256.empty()) run.fail_at("init_sha256", "is the SHA-256 of run.init_from, which is not set");
    if (c.finetune_length != 0)
      run.fail_at("finetune_length", "is the length a fine-tune trains at, and run.init_from (the checkpoint it "
                                     "starts from) is not set; a run of its own trains at run.length");
  }
}

void read_run(Table& run, RunConfig& c, bool fresh) {
  config_keys::read_keys(run, "run", c, fresh);
  check_finetune(run, c);
  run.done();
}

void read_model(Table& model, RunConfig& c, bool fresh) {
  config_keys::read_keys(model, "model", c, fresh);
  const nn::TransformerOptions& m = c.model;
  if (m.d_model % m.heads != 0)
    model.fail_at("heads", "heads " + std::to_string(m.heads) + " must divide model.d_model " + std::to_string(m.d_model) +
                               model.set_by("d_model"));
  model.done();
}

// The keys of one's own corpus (data::TaskInfo::stores_tokenizer: the text task) together.
void check_corpus(const Table& task, const data::TaskOptions& t) {
  if (!data::task_info(t.kind).stores_tokenizer) return;
  if (t.path.empty())
    task.fail_at("path", "the " + t.kind + " task reads one's own text: set task.path to a UTF-8 file or a folder "
                         "of them");
  if (t.valid_fraction + t.test_fraction >= 1.0)
    task.fail_at("test_fraction", "task.valid_fraction + task.test_fraction must be below 1 (the rest trains), "
                                  "found " + std::to_string(t.valid_fraction + t.test_fraction));
}

void read_task(Table& task, RunConfig& c, bool fresh) {
  config_keys::read_keys(task, "task", c, fresh);
  check_corpus(task, c.task);
  task.done();
}

// The position option `o` (nn/position/options.h) from `t`, with its limits.
void read_position_option(Table& t, const nn::PositionOptionInfo& o, nn::PositionOptions& p) {
  std::visit(
      [&](auto member) {
        auto& v = p.*member;
        using T = std::remove_reference_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          t.get(o.key, v, o.range.lo, o.range.hi);
        } else if constexpr (std::is_same_v<T, double>) {
          t.get(o.key, v, o.real.lo, o.real.hi, o.real.lo_open, o.real.hi_open);
        } else if constexpr (std::is_same_v<T, bool>) {
          t.get(o.key, v);
        } else if constexpr (std::is_same_v<T, nn::Untrained>) {
          get_enum(t, o.key, v, nn::kUntrainedNames);
        } else {
          static_assert(std::is_same_v<T, nn::RopeScaling>, "a position option type without its reader");
          get_enum(t, o.key, v, nn::kRopeScalingNames);
        }
      },
      o.member);
}

// The position options that live in `table` ("position" or "grid"), in the descriptors' order.
void read_position_options(Table& t, const char* table, nn::PositionOptions& p) {
  for (const nn::PositionOptionInfo& o : nn::position_option_table())
    if (std::string_view(o.table) == table) read_position_option(t, o, p);
}

// [grid]'s values; its checks that depend on the scheme come after [position] (check_grid).
void read_grid(Table& grid, RunConfig& c, bool fresh) {
  config_keys::read_keys(grid, "grid", c, fresh);
  read_position_options(grid, "grid", c.model.position);  // max_side
}

// Randomized positions: every training sample, and unless position.contiguous_eval every evaluation and validation
// sample, draws as many distinct positions of [0, randomized_max).
void check_randomized(Table& pos, const Table& run, const RunConfig& c, int64_t trained) {
  const nn::PositionOptions& p = c.model.position;
  if (!p.randomized) return;
  if (trained > p.randomized_max)
    pos.fail_at("randomized_max", "a training sample of " + std::to_string(trained) + " tokens (run.length " +
                                      std::to_string(c.train_length()) + run.set_by("length") +
                                      ") draws as many distinct positions: expected at least that, found " +
                                      std::to_string(p.randomized_max));
  if (p.contiguous_eval || c.dims() != 1) return;
  std::vector<int64_t> multipliers = c.eval_multipliers;
  if (c.eval_every > 0) multipliers.insert(multipliers.end(), c.valid_multipliers.begin(), c.valid_multipliers.end());
  const int64_t largest = *std::ranges::max_element(multipliers);
  const int64_t tokens = data::sequence_tokens(c.task.kind, largest * c.length, c.model.causal);
  if (tokens > p.randomized_max)
    pos.fail_at("randomized_max", "an evaluation sample of " + std::to_string(tokens) + " tokens (" +
                                      std::to_string(largest) + " x run.length " + std::to_string(c.length) +
                                      ") draws as many distinct positions, as the reference evaluates: expected at "
                                      "least that, found " + std::to_string(p.randomized_max) +
                                      " (position.contiguous_eval = true evaluates at 0 .. L - 1)");
}

// [position], and the scheme's own checks on the whole model's position options: an rpb::OptionError names
// the option at fault, reported at its key when the config sets it (else at position.scheme).
void read_position(Table& pos, Table& grid, const Table& run, RunConfig& c, bool fresh) {
  nn::PositionOptions& p = c.model.position;
  const int64_t dims = c.dims();
  if (fresh && dims == 2 && !pos.has("scheme")) p.scheme = "swin";
  pos.get("scheme", p.scheme, nn::scheme_names(dims));
  read_position_options(pos, "position", p);
  // L0 of the schemes that scale with the training length (rope scaling, FIRE's threshold, xPos's blocks): the
  // tokens of a training sample at run.length, which an algorithmic task's run.length (its input) is not.
  p.train_length = dims == 1 ? data::sequence_tokens(c.task.kind, c.length, c.model.causal) : c.length;
  p.max_eval_multiplier = c.eval_multipliers.empty() ? 0 : *std::ranges::max_element(c.eval_multipliers);
  p.rope_scaling_trained = !c.init_from.empty();
  if (p.rope_scaling_trained && p.rope_scaling != nn::RopeScaling::none && p.rope_factor == 0)
    pos.fail_at("rope_factor", "a fine-tune (run.init_from) trains with its RoPE scaling, so its factor is part of "
                               "the run: set position.rope_factor (0 takes each evaluation's largest multiplier)");
  if (c.finetune_length != 0 && dims != 1)
    run.fail_at("finetune_length", "a fine-tune at another length needs a token task; " + c.task.kind +
                                       " trains on grids of side run.length");
  const nn::PositionOptions po = c.position();
  const nn::SchemeInfo& info = nn::scheme_info(po);
  // The table of an option (the one that bounds the scheme's length, or one an error names): [grid] (max_side) or
  // [position].
  auto table_of = [&](const std::string& field) -> Table& {
    const nn::PositionOptionInfo* o = nn::find_position_option(field);
    return o && std::string_view(o->table) == "grid" ? grid : pos;
  };
  try {
    nn::validate(po);  // allocates nothing: the scheme is not built
  } catch (const OptionError& e) {
    Table& t = table_of(e.field());
    const std::string& key = t.has(e.field().c_str()) ? e.field() : std::string("scheme");
    (key == "scheme" ? pos : t).fail_at(key.c_str(), "invalid for scheme " + p.scheme + ": " + e.detail());
  }
  if (!c.model.causal && dims == 1 && info.causal_only)
    pos.fail_at("scheme", p.scheme + " has no bidirectional form, which model.causal = false asks for: " +
                              info.causal_only);
  // The tokens a training sample holds: run.length, or an algorithmic task's longest sample of that length.
  const int64_t trained = dims == 1 ? data::sequence_tokens(c.task.kind, c.train_length(), c.model.causal)
                                    : c.train_length();
  check_randomized(pos, run, c, trained);
  if (const int64_t limit = info.max_length(po); limit > 0 && limit < trained) {
    const bool ft = c.finetune_length > 0;
    const std::string key = (ft ? "run.finetune_length" : "run.length");
    const std::string unit = dims == 2 ? " cells per side" : " positions";
    const std::string length = std::to_string(c.train_length()) + run.set_by(ft ? "finetune_length" : "length");
    const std::string need =
        trained == c.train_length()
            ? key + " = " + length + unit
            : std::to_string(trained) + unit + " for " + key + " = " + length + " (a " + c.task.kind + " sample)";
    table_of(info.length_option)
        .fail_at(info.length_option, "the " + p.scheme + " table needs at least " + need + ", got " +
                                         std::to_string(limit));
  }
  pos.done();
}

std::atomic<int64_t> texts_parsed{0}, documents_read{0}, configs_derived{0};  // config_reads()

// Reads and checks `root`: a whole document (`base` null), or settings over `base`, a config read before, whose
// keys they do not set stay as they are (derive_config). `accepted`, when given, receives every dotted key the
// readers asked for.
RunConfig parse_document(toml::table& root, const std::string& source, const OverrideMap& applied,
                         std::vector<std::string>* accepted = nullptr, const RunConfig* base = nullptr) {
  const bool fresh = base == nullptr;
  (fresh ? documents_read : configs_derived).fetch_add(1, std::memory_order_relaxed);
  RunConfig c = fresh ? RunConfig{} : *base;
  c.source = source;
  const Reader r{root, source, applied, fresh};
  Table top(&root, "", source, applied);
  for (const char* t : {"run", "model", "position", "task", "grid", "optim", "sweep"}) top.know(t);
  top.done();

  Table run = r.table("run"), model = r.table("model"), task = r.table("task"), grid = r.table("grid"),
        pos = r.table("position"), sweep = r.table("sweep");
  read_run(run, c, fresh);
  read_model(model, c, fresh);
  read_task(task, c, fresh);
  c.task.causal = c.model.causal;  // an algorithmic task's framing (train/data/algorithmic.h)
  read_grid(grid, c, fresh);
  read_position(pos, grid, run, c, fresh);
  check_grid(grid, c);
  const Table opt = read_optim(r, c, accepted);
  std::vector<std::string> keys;  // the dotted keys of the tables read (accepted_keys), [[optim.group]]'s aside
  for (const auto& [prefix, t] : {std::pair<std::string, const Table*>{"run.", &run}, {"model.", &model},
                                  {"task.", &task}, {"grid.", &grid}, {"position.", &pos}, {"optim.", &opt}})
    for (const std::string& k : t->seen())
      if (prefix + k != "optim.group") keys.push_back(prefix + k);
  const toml::table* st = toml_config::subtable(root, "sweep", source, applied);
  if (fresh) {
    read_sweep(sweep, st, {source, applied, 0, keys, {}}, c);
    // The sweep table stays as written: its defaults depend on the tasks, and it is not part of a run's identity.
    if (st) c.sweep_table = std::make_shared<const SweepTable>(SweepTable{nested_grids(*st)});
  } else if (st && !st->empty()) {
    sweep.fail_at(std::string(st->cbegin()->first.str()).c_str(),
                  "is a key of the sweep itself, which the settings of one run (a sweep method's) cannot set");
  }
  for (const std::string& kind : c.sweep.tasks.empty() ? std::vector<std::string>{c.task.kind} : c.sweep.tasks) {
    check_eval_lengths(run, c, kind,
                       {c.eval_multipliers, c.eval_tokens, "eval_multipliers", "eval_tokens", "evaluation", "test"});
    check_eval_stride(run, c, kind);
    check_framing(model, task, c, kind);
    if (c.eval_every > 0)  // the valid split is scored during training only
      check_eval_lengths(
          run, c, kind,
          {c.valid_multipliers, c.valid_tokens, "valid_multipliers", "valid_tokens", "validation", "valid"});
  }
  // The effective config, written from the typed values (config_keys.h), with the sweep table as written.
  toml::table effective = config_keys::write_effective(c);
  if (c.sweep_table) effective.insert("sweep", c.sweep_table->table);
  c.text = toml_config::document_text(effective);
  if (accepted) accepted->insert(accepted->end(), keys.begin(), keys.end());
  return c;
}

toml::table parse_text(const std::string& text, const std::string& source) {
  texts_parsed.fetch_add(1, std::memory_order_relaxed);
  check_toml_depth(text, source);  // the parser recurses once per level: a deep document would overflow the stack
  try {
    return toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw Error(toml_config::where(e.source(), source) + ": TOML syntax error: " + printable(e.description()));
  }
}

}  // namespace

std::vector<int64_t> RunConfig::valid_lengths() const {
  std::vector<int64_t> lengths;
  if (eval_every > 0)
    for (const int64_t m : valid_multipliers) lengths.push_back(m * length);
  return lengths;
}

std::string RunConfig::run_dir() const { return (std::filesystem::path(out_dir) / name).string(); }

nn::EmbeddingRecipe RunConfig::embedding_recipe() const {
  return nn::resolve_recipe(model.embedding, model.position.scheme, dims());
}

namespace {

// Sets each of `settings` in `root`, recorded in `applied` as set by `origin`.
void apply_settings(toml::table& root, const std::vector<ConfigSetting>& settings, OverrideMap& applied,
                    const std::string& origin) {
  for (const ConfigSetting& s : settings) {
    const toml::table value = setting_table(s.value);
    toml_config::set_value(root, s.key, *value.get("value"), applied, origin);
  }
}

}  // namespace

RunConfig derive_config(const RunConfig& base, const std::vector<ConfigSetting>& settings, const std::string& origin) {
  toml::table root;  // the settings alone, read over `base`
  OverrideMap applied;
  apply_settings(root, settings, applied, origin);
  return parse_document(root, base.source, applied, nullptr, &base);
}

RunConfig run_config(const RunConfig& sweep, const SweepRun& run) {
  toml::table root;  // the run's keys and its method's settings, read over `sweep`
  toml::table& r = table_in(root, "run");
  r.insert_or_assign("out_dir", run.out_dir);
  r.insert_or_assign("name", run.name);
  r.insert_or_assign("seed", static_cast<int64_t>(run.seed));
  table_in(root, "position").insert_or_assign("scheme", run.method.scheme);
  table_in(root, "task").insert_or_assign("kind", run.task);
  OverrideMap applied;
  apply_settings(root, run.method.settings, applied, "sweep method \"" + printable(run.method.text) + "\"");
  RunConfig c = parse_document(root, sweep.source, applied, nullptr, &sweep);
  // The runs of a sweep share one token cache (a text corpus is tokenized once for all its methods and seeds).
  c.task.token_cache = (std::filesystem::path(sweep.run_dir()) / ".token_cache").string();
  return c;
}

ConfigReads config_reads() {
  return {texts_parsed.load(std::memory_order_relaxed), documents_read.load(std::memory_order_relaxed),
          configs_derived.load(std::memory_order_relaxed)};
}

const std::vector<LegacyKey>& legacy_keys() {
  static const std::vector<LegacyKey> keys = {
      {"model", "embedding", "gpt2"},  // before model.embedding, every scheme's tokens were GPT-2's
  };
  return keys;
}

RunConfig parse_stored_config(const std::string& text, const std::string& source) {
  toml::table root = parse_text(text, source);
  for (const LegacyKey& k : legacy_keys()) {
    toml::table& t = table_in(root, k.table);
    if (!t.contains(k.key)) t.insert(k.key, std::string(k.value));
  }
  return parse_document(root, source, OverrideMap{});
}

RunConfig parse_config(const std::string& text, const std::string& source, const std::vector<std::string>& overrides,
                       const FlagSettings& flags) {
  toml::table root = parse_text(text, source);
  OverrideMap applied;
  for (const std::string& o : overrides) toml_config::apply_override(root, o, applied);
  apply_settings(root, flags.settings, applied, flags.origin);
  return parse_document(root, source, applied);
}

std::vector<std::string> accepted_keys(const std::string& text, const std::string& source) {
  toml::table root = parse_text(text, source);
  std::vector<std::string> keys;
  parse_document(root, source, OverrideMap{}, &keys);
  return keys;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides, const FlagSettings& flags) {
  InputOptions o;
  o.what = "config";
  o.max_bytes = kMaxConfigBytes;
  o.limit_source = "the most rpb reads of a config";
  return parse_config(read_input_file(path, o), path, overrides, flags);
}

}  // namespace rpb
