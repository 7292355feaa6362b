// rpb/train/config/config_detail.h: the pieces of the run config's parser that its files share (config.cpp reads
// the tables, config_checks.cpp checks across them, config_optim.cpp reads [optim] and [[optim.group]]). Internal to
// train/config/ (tests/test_layering.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "train/config/config.h"
#include "train/config/toml_table.h"

namespace rpb::config_detail {

/// The table `name` of `root`, created when absent.
inline toml::table& table_in(toml::table& root, const char* name) {
  if (!root.contains(name)) root.insert(name, toml::table{});
  return *root.get(name)->as_table();
}

/// The tables of one document, read in turn; each reader takes what it needs from the config read so far (the
/// effective config is written from the typed value afterwards: config_keys.h write_effective).
struct Reader {
  const toml::table& root;
  const std::string& source;
  const toml_config::OverrideMap& applied;
  bool fresh;  // a whole document; false: settings over a config read before (derive_config)
  toml_config::Table table(const char* name) const {
    return toml_config::Table(toml_config::subtable(root, name, source, applied), std::string(name) + ".", source,
                              applied);
  }
};

/// A value of a closed set (core/enum_names.h): read as its name, one of the table's, and kept as the enum.
template <typename E, std::size_t N>
void get_enum(toml_config::Table& t, const char* key, E& out, const EnumName<E> (&names)[N]) {
  std::string name = enum_name(names, out);
  t.get(key, name, enum_names(names));
  out = *enum_value(names, name);
}

/// [optim] and its [[optim.group]] rules into c.optim (settings over a config read before keep its rules when they
/// set none); `accepted`, when given, receives the group keys read.
toml_config::Table read_optim(const Reader& r, RunConfig& c, std::vector<std::string>* accepted);

// ---- checks across tables, once every table is read (config_checks.cpp) ----
/// One evaluation's lengths and tokens: the test split's (run.eval_multipliers, run.eval_tokens) or the valid
/// split's (run.valid_multipliers, run.valid_tokens).
struct EvalKeys {
  const std::vector<int64_t>& multipliers;
  int64_t tokens;
  const char* multipliers_key;
  const char* tokens_key;
  const char* what;   // "evaluation" or "validation"
  const char* split;  // the stream: "test" or "valid"
};

/// run.length and an evaluation's multipliers: the longest sequence within limits::kMaxSequence positions, and for
/// the token tasks the same tokens scorable at every length. Fails at the key in `run`.
void check_eval_lengths(toml_config::Table& run, const RunConfig& c, const std::string& kind, const EvalKeys& k);
/// run.eval_stride: a token task's, at most the shortest evaluation length.
void check_eval_stride(toml_config::Table& run, const RunConfig& c, const std::string& kind);
/// model.causal against task `kind`: a bidirectional model only for a task with an encoder framing (an algorithmic
/// task's spec), and an algorithmic task only in a framing its spec runs in; an algorithmic task's task.min_length
/// against run.length and the spec's floor. Fails at model.causal or the task's key.
void check_framing(toml_config::Table& model, toml_config::Table& task, const RunConfig& c, const std::string& kind);
/// grid.eval_window: only for the windowed 2-D schemes. Closes the [grid] table.
void check_grid(toml_config::Table& grid, const RunConfig& c);

}  // namespace rpb::config_detail
