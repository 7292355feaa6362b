// rpb/train/config/document.h: a config's [sweep] table as written, and typed settings in and out of TOML
// (internal to train/config: config.cpp reads documents, sweep_method.cpp parses a sweep's methods, run_identity.cpp
// derives identities).
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "train/config/config.h"
#include "train/config/toml_table.h"

namespace rpb {

/// RunConfig::sweep_table: the [sweep] table as written (with nested_grids' form of its grids), which the effective
/// config (RunConfig::text) holds beside the keys written from the typed values.
struct SweepTable {
  toml::table table;
};

/// A typed setting's value as TOML, in a table at "value" (the shape toml_config::parse_value gives).
toml::table setting_table(const SettingValue& v);

/// A TOML value as a typed setting's value; a table or a date throws rpb::Error from `from`.
SettingValue setting_value(const toml::node& n, const std::string& from);

/// What makes `v` unfit for a path in the run's file system ("a control character (U+001B)", "300 bytes"), or "":
/// a `component` (run.name, a sweep method) is one folder name; any value is valid UTF-8 free of controls and of
/// format and separator characters, and at most `max_bytes` long.
std::string path_problem(const std::string& v, std::size_t max_bytes, bool component);

/// One of sweep.methods, "t5@max_distance=64@untrained=nearest", parsed for the sweep's dims: its scheme and its
/// typed settings; errors fail at sweep.methods.
SweepMethod parse_method(toml_config::Table& sweep, const std::string& text, int64_t dims);

/// Where a sweep's [[sweep.grid]] tables are read.
struct GridContext {
  const std::string& source;                 // the config's source and overrides: error locations
  const toml_config::OverrideMap& applied;
  int64_t dims;                              // the sweep's: its schemes'
  const std::vector<std::string>& accepted;  // every dotted key the readers accept: a grid key outside is refused
  const std::vector<SweepMethod>& listed;    // sweep.methods: a grid point equal to one is refused
};

/// The methods of the [[sweep.grid]] tables in `grid` (the [sweep] table's "grid" node), table by table: each
/// table's methods x the cartesian product of its value lists (the last key varying fastest), parsed by parse_method
/// from the names they would be written with by hand (SweepConfig). Throws rpb::Error at the key at fault; a point
/// that sets the same keys to the same values as another method (in any order) is refused.
std::vector<SweepMethod> grid_methods(const toml::node& grid, const GridContext& context);

/// Reads the [sweep] table into c.sweep: methods (default: every scheme of the tasks' dims, or none beside grids),
/// seeds, tasks, figures, then the points of its [[sweep.grid]] tables (`st`, the table as written; `where`: the
/// config's source, overrides and accepted keys, its dims and methods filled in here). Errors name the key at fault.
void read_sweep(toml_config::Table& sweep, const toml::table* st, const GridContext& where, RunConfig& c);

/// `sweep` (a [sweep] table as written, whose grids grid_methods read) with each [[sweep.grid]] table's quoted dotted
/// keys ("optim.lr" = [...]) set as nested tables (optim.lr = [...]), which read the same: so that document_text
/// writes TOML that reads back ("optim.lr" beside optim.warmup_steps would write the table optim twice).
toml::table nested_grids(const toml::table& sweep);

}  // namespace rpb
