// rpb/train/config/config_keys.cpp: the rows of the run config's keys and their reader and writer
// (train/config/config_keys.h).
#include "train/config/config_keys.h"

#include <string_view>
#include <type_traits>

#include "core/error.h"
#include "core/text.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "optim/schedule.h"
#include "train/config/document.h"
#include "train/data/task_registry.h"
#include "train/data/tokenizer.h"

namespace rpb::config_keys {

namespace {

namespace L = nn::limits;
using namespace run_limits;
using R = RunConfig;

constexpr KeyRole kOutside = KeyRole::outside;

// A table's key that an integer or real bound alone does not say (nn/limits.h, run_limits).
constexpr L::RealRange kDropout{0.0, 1.0, false, true}, kAttnScale{0.0, 1e6}, kInitStd{0.0, 10.0, true},
    kConcentration{0.0, 1e6, true}, kUnit{0.0, 1.0}, kFraction{0.0, 1.0, true, true}, kLr{0.0, 1e3, true},
    kBeta{0.0, 1.0, false, true}, kEps{0.0, 1.0, true}, kDecay{0.0, 1e3}, kClip{0.0, 1e12};

bool stores_tokenizer(const R& c) { return data::task_info(c.task.kind).stores_tokenizer; }
bool retrieval(const R& c) { return data::task_info(c.task.kind).retrieval; }
bool algorithmic(const R& c) { return data::task_info(c.task.kind).algorithmic != nullptr; }
bool free_alphabet(const R& c) {
  const data::AlgorithmicSpec* s = data::task_info(c.task.kind).algorithmic;
  return s && s->default_alphabet > 0;
}

std::vector<ConfigKey> run_keys() {
  return {
      {"run", "name", PathKey{[](R& c) -> auto& { return c.name; }, true}, kOutside},
      {"run", "out_dir", PathKey{[](R& c) -> auto& { return c.out_dir; }}, kOutside},
      {"run", "seed", SeedKey{[](R& c) -> auto& { return c.seed; }}},
      {"run", "steps", IntKey{[](R& c) -> auto& { return c.steps; }, 1, kMaxSteps}},
      {"run", "batch", IntKey{[](R& c) -> auto& { return c.batch; }, 1, kMaxBatch}},
      {"run", "length", IntKey{[](R& c) -> auto& { return c.length; }, 1, L::kMaxSequence}},
      {"run", "log_every", IntKey{[](R& c) -> auto& { return c.log_every; }, 1, kMaxSteps}, kOutside},
      {"run", "checkpoint_every", IntKey{[](R& c) -> auto& { return c.checkpoint_every; }, 0, kMaxSteps}, kOutside},
      {"run", "eval_multipliers",
       IntListKey{[](R& c) -> auto& { return c.eval_multipliers; }, 1, kMaxMultiplier, kMaxLengths}, kOutside},
      {"run", "eval_tokens", IntKey{[](R& c) -> auto& { return c.eval_tokens; }, 1, kMaxTokens}, kOutside},
      {"run", "eval_batch", IntKey{[](R& c) -> auto& { return c.eval_batch; }, 1, kMaxBatch}, kOutside},
      {"run", "eval_every", IntKey{[](R& c) -> auto& { return c.eval_every; }, 0, kMaxSteps}, kOutside},
      {"run", "eval_diagnostics", BoolKey{[](R& c) -> auto& { return c.eval_diagnostics; }}, kOutside},
      {"run", "eval_stride", IntKey{[](R& c) -> auto& { return c.eval_stride; }, 0, L::kMaxSequence}, kOutside,
       [](const R& c) { return c.eval_stride != 0; }},
      {"run", "valid_multipliers",
       IntListKey{[](R& c) -> auto& { return c.valid_multipliers; }, 1, kMaxMultiplier, kMaxLengths}, kOutside},
      {"run", "valid_tokens", IntKey{[](R& c) -> auto& { return c.valid_tokens; }, 1, kMaxTokens}, kOutside},
      {"run", "on_nonfinite", choice<OnNonFinite>([](R& c) -> auto& { return c.on_nonfinite; }, kOnNonFiniteNames)},
      {"run", "device", choice<Device>([](R& c) -> auto& { return c.device; }, kDeviceNames), kOutside,
       [](const R& c) { return c.device != Device::cpu; }},
      {"run", "init_from", PathKey{[](R& c) -> auto& { return c.init_from; }}, kOutside,
       [](const R& c) { return !c.init_from.empty(); }, FineTuneKey::parent},
      {"run", "init_sha256", TextKey{[](R& c) -> auto& { return c.init_sha256; }}, KeyRole::identity,
       [](const R& c) { return !c.init_sha256.empty(); }, FineTuneKey::pin},
      {"run", "finetune_length", IntKey{[](R& c) -> auto& { return c.finetune_length; }, 0, L::kMaxSequence},
       KeyRole::identity, [](const R& c) { return c.finetune_length != 0; }},
  };
}

std::vector<ConfigKey> model_keys() {
  return {
      // false: a bidirectional model, the encoder framing of the algorithmic tasks (train/data/algorithmic.h)
      {"model", "causal", BoolKey{[](R& c) -> auto& { return c.model.causal; }}, KeyRole::identity,
       [](const R& c) { return !c.model.causal; }},
      {"model", "d_model", IntKey{[](R& c) -> auto& { return c.model.d_model; }, L::d_model.lo, L::d_model.hi}},
      {"model", "heads", IntKey{[](R& c) -> auto& { return c.model.heads; }, L::heads.lo, L::heads.hi}},
      {"model", "layers", IntKey{[](R& c) -> auto& { return c.model.layers; }, L::layers.lo, L::layers.hi}},
      {"model", "d_ff", IntKey{[](R& c) -> auto& { return c.model.d_ff; }, L::d_ff.lo, L::d_ff.hi}},
      {"model", "dropout", RealKey{[](R& c) -> auto& { return c.model.dropout; }, kDropout}},
      {"model", "tie_head", BoolKey{[](R& c) -> auto& { return c.model.tie_head; }}},
      {"model", "share_position", BoolKey{[](R& c) -> auto& { return c.model.share_position; }}},
      {"model", "attn_scale", RealKey{[](R& c) -> auto& { return c.model.attn_scale; }, kAttnScale}},
      {"model", "fused_attention", BoolKey{[](R& c) -> auto& { return c.model.fused_attention; }}},
      {"model", "init_std", RealKey{[](R& c) -> auto& { return c.model.init_std; }, kInitStd}},
      {"model", "gelu", choice<GeluApprox>([](R& c) -> auto& { return c.model.gelu; }, kGeluApproxNames)},
      {"model", "embedding",
       choice<nn::EmbeddingRecipe>([](R& c) -> auto& { return c.model.embedding; }, nn::kEmbeddingRecipeNames)},
  };
}

std::vector<ConfigKey> task_keys() {
  return {
      {"task", "kind", TextKey{[](R& c) -> auto& { return c.task.kind; }, [] { return data::task_names(); }}},
      {"task", "vocab", IntKey{[](R& c) -> auto& { return c.task.vocab; }, 2, kMaxVocab}},
      {"task", "order", IntKey{[](R& c) -> auto& { return c.task.order; }, 1, 16}},
      {"task", "concentration", RealKey{[](R& c) -> auto& { return c.task.concentration; }, kConcentration}},
      {"task", "lag", IntKey{[](R& c) -> auto& { return c.task.lag; }, 1, 1 << 20}},
      {"task", "noise", RealKey{[](R& c) -> auto& { return c.task.noise; }, kUnit}},
      {"task", "seed", SeedKey{[](R& c) -> auto& { return c.task.seed; }}},
      {"task", "train_tokens", IntKey{[](R& c) -> auto& { return c.task.train_tokens; }, 2, kMaxTokens}},
      {"task", "eval_tokens", IntKey{[](R& c) -> auto& { return c.task.eval_tokens; }, 2, kMaxTokens}},
      {"task", "kjv_path", PathKey{[](R& c) -> auto& { return c.task.kjv_path; }}, kOutside},
      // one's own corpus and its tokenizer (data::TaskInfo::stores_tokenizer)
      {"task", "path", PathKey{[](R& c) -> auto& { return c.task.path; }}, kOutside, stores_tokenizer},
      {"task", "documents",
       TextKey{[](R& c) -> auto& { return c.task.documents; },
               [] { return std::vector<std::string>{"files", "blank_lines"}; }},
       KeyRole::identity, stores_tokenizer},
      {"task", "valid_fraction", RealKey{[](R& c) -> auto& { return c.task.valid_fraction; }, kFraction},
       KeyRole::identity, stores_tokenizer},
      {"task", "test_fraction", RealKey{[](R& c) -> auto& { return c.task.test_fraction; }, kFraction},
       KeyRole::identity, stores_tokenizer},
      {"task", "tokenizer", TextKey{[](R& c) -> auto& { return c.task.tokenizer; }, data::tokenizer_names},
       KeyRole::identity, stores_tokenizer},
      {"task", "sentencepiece_model",
       TextKey{[](R& c) -> auto& { return c.task.sentencepiece_model; },
               [] { return std::vector<std::string>{"unigram", "bpe"}; }},
       KeyRole::identity, stores_tokenizer},
      {"task", "sentencepiece_sentences",
       IntKey{[](R& c) -> auto& { return c.task.sentencepiece_sentences; }, 1000, int64_t{1} << 30},
       KeyRole::identity, stores_tokenizer},
      // passkey retrieval (data::TaskInfo::retrieval)
      {"task", "passkey_digits", IntKey{[](R& c) -> auto& { return c.task.passkey_digits; }, 1, 64},
       KeyRole::identity, retrieval},
      {"task", "passkey_samples", IntKey{[](R& c) -> auto& { return c.task.passkey_samples; }, 1, 100000},
       KeyRole::identity, retrieval},
      // the algorithmic tasks (data::TaskInfo::algorithmic)
      {"task", "alphabet", IntKey{[](R& c) -> auto& { return c.task.alphabet; }, 0, kMaxVocab - data::kFramingTokens},
       KeyRole::identity, free_alphabet},
      {"task", "min_length", IntKey{[](R& c) -> auto& { return c.task.min_length; }, 0, L::kMaxSequence},
       KeyRole::identity, algorithmic},
      {"task", "eval_samples", IntKey{[](R& c) -> auto& { return c.task.eval_samples; }, 1, 1 << 20}, kOutside,
       algorithmic},
  };
}

// [grid] (its max_side is a position option) and [optim] ([[optim.group]]: config_optim.cpp).
std::vector<ConfigKey> grid_optim_keys() {
  return {
      {"grid", "window", IntKey{[](R& c) -> auto& { return c.grid.window; }, L::window.lo, L::window.hi}},
      {"grid", "shift", BoolKey{[](R& c) -> auto& { return c.grid.shift; }}},
      {"grid", "cpb_hidden", IntKey{[](R& c) -> auto& { return c.grid.cpb_hidden; }, L::cpb_hidden.lo, L::cpb_hidden.hi}},
      {"grid", "eval_window", IntKey{[](R& c) -> auto& { return c.grid.eval_window; }, 0, L::window.hi}, kOutside},
      {"optim", "kind", choice<OptimizerKind>([](R& c) -> auto& { return c.optim.kind; }, kOptimizerKindNames)},
      {"optim", "lr", RealKey{[](R& c) -> auto& { return c.optim.schedule.lr; }, kLr}},
      {"optim", "schedule",
       choice<optim::ScheduleKind>([](R& c) -> auto& { return c.optim.schedule.kind; }, optim::kScheduleKindNames)},
      {"optim", "warmup_steps", IntKey{[](R& c) -> auto& { return c.optim.schedule.warmup_steps; }, 0, kMaxSteps}},
      {"optim", "min_lr_ratio", RealKey{[](R& c) -> auto& { return c.optim.schedule.min_lr_ratio; }, kUnit}},
      {"optim", "beta1", RealKey{[](R& c) -> auto& { return c.optim.adam.beta1; }, kBeta}},
      {"optim", "beta2", RealKey{[](R& c) -> auto& { return c.optim.adam.beta2; }, kBeta}},
      {"optim", "eps", RealKey{[](R& c) -> auto& { return c.optim.adam.eps; }, kEps}},
      // AdamW decays by 0.01 unless told otherwise, Adam and SGD not at all.
      {"optim", "weight_decay",
       RealKey{[](R& c) -> auto& { return c.optim.adam.weight_decay; }, kDecay,
               [](const R& c) { return c.optim.kind == OptimizerKind::adamw ? 0.01 : 0.0; }}},
      {"optim", "momentum", RealKey{[](R& c) -> auto& { return c.optim.sgd.momentum; }, kBeta}},
      {"optim", "grad_clip", RealKey{[](R& c) -> auto& { return c.optim.grad_clip; }, kClip}},
      {"optim", "total_steps", IntKey{[](R& c) -> auto& { return c.optim.total_steps; }, 0, kMaxSteps}},
  };
}

const std::vector<ConfigKey>& rows() {
  static const std::vector<ConfigKey> table = [] {
    std::vector<ConfigKey> all;
    for (std::vector<ConfigKey> (*part)() : {run_keys, model_keys, task_keys, grid_optim_keys})
      for (ConfigKey& k : part()) all.push_back(std::move(k));
    return all;
  }();
  return table;
}

// A PathKey's check: `out` is a folder name (`component`) or a path rpb can use (path_problem).
void check_path(toml_config::Table& t, const char* key, const std::string& out, bool component) {
  const std::size_t max_bytes = component ? kMaxNameBytes : kMaxPathBytes;
  if (const std::string p = path_problem(out, max_bytes, component); !p.empty())
    t.fail_at(key, std::string(component ? "expected a folder name (one path component: not '.' or '..', no '/', "
                                         : "expected a path (") +
                       "no control, format or separator characters, at most " + std::to_string(max_bytes) +
                       " bytes), found " + p);
}

void read_key(toml_config::Table& t, const ConfigKey& k, RunConfig& c, bool fresh) {
  std::visit(
      [&](const auto& type) {
        using T = std::decay_t<decltype(type)>;
        if constexpr (std::is_same_v<T, IntKey>) {
          t.get(k.key, type.field(c), type.lo, type.hi);
        } else if constexpr (std::is_same_v<T, SeedKey>) {
          t.get(k.key, type.field(c));
        } else if constexpr (std::is_same_v<T, RealKey>) {
          double& v = type.field(c);
          if (fresh && type.default_of) v = type.default_of(c);
          t.get(k.key, v, type.range.lo, type.range.hi, type.range.lo_open, type.range.hi_open);
        } else if constexpr (std::is_same_v<T, BoolKey>) {
          t.get(k.key, type.field(c));
        } else if constexpr (std::is_same_v<T, TextKey>) {
          t.get(k.key, type.field(c), type.choices ? type.choices() : std::vector<std::string>{});
        } else if constexpr (std::is_same_v<T, PathKey>) {
          t.get(k.key, type.field(c));
          check_path(t, k.key, type.field(c), type.component);
        } else if constexpr (std::is_same_v<T, ChoiceKey>) {
          std::string name = type.get(c);
          t.get(k.key, name, type.names);
          type.set(c, name);
        } else {
          static_assert(std::is_same_v<T, IntListKey>, "a key type without its reader");
          t.get(k.key, type.field(c), type.lo, type.hi, type.max_size);
        }
      },
      k.type);
}

// `k`'s value in `c` into `table`.
void write_key(const ConfigKey& k, const RunConfig& c, toml::table& table) {
  RunConfig& m = const_cast<RunConfig&>(c);  // the fields are read, never written
  std::visit(
      [&](const auto& type) {
        using T = std::decay_t<decltype(type)>;
        if constexpr (std::is_same_v<T, SeedKey>) {
          table.insert_or_assign(k.key, static_cast<int64_t>(type.field(m)));
        } else if constexpr (std::is_same_v<T, ChoiceKey>) {
          table.insert_or_assign(k.key, type.get(c));
        } else if constexpr (std::is_same_v<T, IntListKey>) {
          toml::array a;
          for (const int64_t v : type.field(m)) a.push_back(v);
          table.insert_or_assign(k.key, std::move(a));
        } else {
          table.insert_or_assign(k.key, type.field(m));
        }
      },
      k.type);
}

// The position option `o` in `c` as a TOML value into `table`.
void write_option(const nn::PositionOptionInfo& o, const nn::PositionOptions& p, toml::table& table) {
  std::visit(
      [&](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool>)
          table.insert_or_assign(o.key, v);
        else
          table.insert_or_assign(o.key, nn::value_text(v));
      },
      nn::option_value(o, p));
}

}  // namespace

const std::vector<ConfigKey>& config_keys() { return rows(); }

std::string fine_tune_key(FineTuneKey which) {
  for (const ConfigKey& k : rows())
    if (k.fine_tune == which) return k.dotted();
  throw Error("config keys: no row is the fine-tune key " + std::to_string(static_cast<int>(which)));
}

void read_keys(toml_config::Table& t, const char* table, RunConfig& c, bool fresh) {
  for (const ConfigKey& k : rows())
    if (std::string_view(k.table) == table) read_key(t, k, c, fresh);
}

toml::table write_effective(const RunConfig& c) {
  toml::table root;
  for (const char* name : {"run", "model", "position", "task", "grid", "optim"}) root.insert(name, toml::table{});
  const auto table = [&](const char* name) -> toml::table& { return *root.get(name)->as_table(); };
  for (const ConfigKey& k : rows())
    if (!k.written || k.written(c)) write_key(k, c, table(k.table));
  table("position").insert_or_assign("scheme", c.model.position.scheme);
  const nn::PositionOptions defaults;
  for (const nn::PositionOptionInfo& o : nn::position_option_table())
    if (!o.added || nn::option_value(o, c.model.position) != nn::option_value(o, defaults))
      write_option(o, c.model.position, table(o.table));
  if (!c.optim.adam.groups.empty()) {
    toml::array groups;
    for (const optim::GroupRule& g : c.optim.adam.groups)
      groups.push_back(toml::table{{"pattern", g.pattern}, {"weight_decay", g.weight_decay}, {"lr_scale", g.lr_scale}});
    table("optim").insert_or_assign("group", std::move(groups));
  }
  return root;
}

}  // namespace rpb::config_keys
