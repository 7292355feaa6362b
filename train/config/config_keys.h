// rpb/train/config/config_keys.h: the run config's keys, one row per key of [run], [model], [task], [grid] and
// [optim] (internal to train/config/; the [position] options and [grid]'s max_side are rows of the option table,
// nn/position/options.h, and [[optim.group]] and [sweep] have readers of their own).
//
// A row gives the key's table and name, its type and bounds, the RunConfig field it sets, its role (part of what
// a run trains, or not) and when the effective config holds it. The readers (config.cpp) read the rows in order,
// the effective config (RunConfig::text) is written from the typed value by write_effective, and the run identity
// (run_identity.h) keeps the keys whose role is identity: a key is one row here and its use.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "core/enum_names.h"
#include "nn/limits.h"
#include "train/config/config.h"
#include "train/config/toml_table.h"

namespace rpb::config_keys {

/// The RunConfig field a row reads and writes.
template <class T>
using Field = std::function<T&(RunConfig&)>;

struct IntKey {  // an integer in [lo, hi]
  Field<int64_t> field;
  int64_t lo, hi;
};
struct SeedKey {  // a seed: an integer in [0, 2^63 - 1]
  Field<uint64_t> field;
};
struct RealKey {  // a number in its range; `default_of`, when set, gives the default from the keys read before
  Field<double> field;
  nn::limits::RealRange range;
  std::function<double(const RunConfig&)> default_of = nullptr;
};
struct BoolKey {
  Field<bool> field;
};
struct TextKey {  // a string, one of `choices()` when set
  Field<std::string> field;
  std::function<std::vector<std::string>()> choices = nullptr;
};
struct PathKey {  // a folder or file name (path_problem): one path component (run.name) or a path
  Field<std::string> field;
  bool component = false;
};
struct ChoiceKey {  // an enum, read and written as one of its names
  std::function<std::string(const RunConfig&)> get;
  std::function<void(RunConfig&, const std::string&)> set;
  std::vector<std::string> names;
};
struct IntListKey {  // a non-empty list of distinct integers in [lo, hi], at most max_size of them
  Field<std::vector<int64_t>> field;
  int64_t lo, hi;
  std::size_t max_size;
};
using KeyType = std::variant<IntKey, SeedKey, RealKey, BoolKey, TextKey, PathKey, ChoiceKey, IntListKey>;

/// An enum key over `names` (core/enum_names.h).
template <class E, std::size_t N>
ChoiceKey choice(Field<E> field, const EnumName<E> (&names)[N]) {
  return {[field, &names](const RunConfig& c) { return std::string(enum_name(names, field(const_cast<RunConfig&>(c)))); },
          [field, &names](RunConfig& c, const std::string& name) { field(c) = *enum_value(names, name); },
          enum_names(names)};
}

/// What a key is to a run: `identity`, part of what the run trains (a change makes another run); `outside`, how it
/// is named, stored, logged, evaluated or where it runs (run.name, run.eval_tokens, run.device, ...).
enum class KeyRole { identity, outside };

/// A key that makes a run a fine-tune: the checkpoint it starts from (`parent`, run.init_from; in a sweep method, the
/// method whose run it continues), or that checkpoint's SHA-256 (`pin`, run.init_sha256).
enum class FineTuneKey { none, parent, pin };

struct ConfigKey {
  const char* table;  // "run"
  const char* key;    // "steps"
  KeyType type;
  KeyRole role = KeyRole::identity;
  /// When the effective config holds it; null: always. A key added after runs were stored is written only when set
  /// away from the value that behaves as before (run.eval_stride, run.device, the fine-tune keys), and a task's own
  /// keys only for that task, so the stored configs of runs without them keep their text.
  bool (*written)(const RunConfig&) = nullptr;
  FineTuneKey fine_tune = FineTuneKey::none;

  /// "run.steps".
  std::string dotted() const { return std::string(table) + "." + key; }
};

/// Every row, table by table ([run], [model], [task], [grid], [optim]), each table's in the order its reader reads
/// them (which decides the first error of a config with two).
const std::vector<ConfigKey>& config_keys();

/// The dotted key of the row that is `which` ("run.init_from" for parent).
std::string fine_tune_key(FineTuneKey which);

/// Reads the rows of `table` from `t` into `c`, in order: an absent key keeps its value (the default; for a `fresh`
/// read a RealKey's default_of first); a present one is checked (type, bounds, choices) and set. Throws rpb::Error
/// at the key at fault. Not `fresh`: `t` holds settings over a config read before (derive_config).
void read_keys(toml_config::Table& t, const char* table, RunConfig& c, bool fresh);

/// The effective config of `c` as a TOML document, written from its typed values: every row's key that `written`
/// keeps, the [position] and [grid] options of the option table (an added one only when set away from its default),
/// [[optim.group]] when it has groups; without [sweep], which the readers keep as written.
toml::table write_effective(const RunConfig& c);

}  // namespace rpb::config_keys
