// rpb/train/config/sweep_grid.cpp: a sweep's [[sweep.grid]] tables, expanded into the methods they name
// (document.h grid_methods; the syntax is in config.h SweepConfig).
#include <algorithm>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/text.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "train/config/document.h"

namespace rpb {

namespace {

// One key a grid table sweeps.
struct GridKey {
  std::string written;               // as the table writes it, flattened: "optim.lr", "max_distance"
  std::string dotted;                // the config key: "optim.lr", "position.max_distance"
  const toml::node* list = nullptr;  // its list of values (errors point at it)
  std::vector<SettingValue> values;  // in the order written
};

// The keys the sweep sets for each of its runs, and what sets them instead.
const std::map<std::string, std::string>& sweep_keys() {
  static const std::map<std::string, std::string> keys = {
      {"position.scheme", "the grid's methods name the schemes"},
      {"task.kind", "sweep.tasks names the tasks"},
      {"run.seed", "sweep.seeds names the seeds"},
      {"run.name", "the sweep names each run's folder"},
      {"run.out_dir", "the sweep names each run's folder"}};
  return keys;
}

// Whether scheme `s` in a model of `dims` reads the dotted `key` (tests/test_keys_honoured.cpp checks these rules
// on every key): a position option (nn/position/options.h) only the schemes its row names; [grid]'s window keys
// (window, shift, eval_window) only the window schemes, and cpb_hidden only the one with a bias MLP (swin_v2);
// model.tie_head only the 1-D language model, and model.share_position its schemes with a module per layer; every
// other key every scheme.
bool scheme_reads(const nn::SchemeInfo& s, const std::string& key, int64_t dims) {
  if (key == "model.tie_head") return dims == 1;
  if (key == "model.share_position") return dims == 1 && s.per_layer;
  const auto dot = key.find('.');
  const std::string table = key.substr(0, dot), name = key.substr(dot + 1);
  if (table != "position" && table != "grid") return true;
  if (const nn::PositionOptionInfo* o = nn::find_position_option(name); o && table == o->table) return o->read_by(s);
  if (table == "position") return true;  // position.scheme: refused before (sweep_keys)
  return s.kind == nn::PositionKind::window && (name != "cpb_hidden" || s.window_bias == nn::WindowBias::continuous);
}

// Every value of `t` by its dotted key (a grid may write optim.lr = [...] unquoted: a table optim holding lr), the
// table's own "methods" aside.
void collect(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out) {
  for (auto&& [k, v] : t) {
    const std::string key = prefix + std::string(k.str());
    if (key == "methods") continue;
    if (const toml::table* sub = v.as_table()) collect(*sub, key + ".", out);
    else out.emplace_back(key, &v);
  }
}

// Reads one grid table's swept keys, checked against what the sweep and its readers accept; `prefix` is
// "sweep.grid[<i>].".
std::vector<GridKey> read_keys(const toml::table& t, const toml_config::Table& table, const std::string& prefix,
                               const GridContext& context) {
  std::vector<std::pair<std::string, const toml::node*>> found;
  collect(t, "", found);
  std::sort(found.begin(), found.end());
  std::vector<GridKey> keys;
  for (const auto& entry : found) {
    const std::string& written = entry.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const toml::node* n = entry.second;
    const auto fail = [&](const std::string& what) {
      throw Error(table.location(*n, n->source()) + ": " + prefix + printable(written) + " = " + toml_config::repr(*n) +
                  ": " + what);
    };
    GridKey k{written, (written.find('.') == std::string::npos ? "position." : "") + written, n, {}};
    if (const auto it = sweep_keys().find(k.dotted); it != sweep_keys().end())
      fail("a grid cannot sweep " + k.dotted + ": " + it->second);
    if (std::find(context.accepted.begin(), context.accepted.end(), k.dotted) == context.accepted.end()) {
      const std::string near = closest(k.dotted, context.accepted);
      fail("unknown key " + printable(k.dotted) + (near.empty() ? "" : " (did you mean " + near + "?)"));
    }
    for (const GridKey& e : keys)
      if (e.dotted == k.dotted) fail("sets " + k.dotted + " again (as " + printable(e.written) + ")");
    const toml::array* a = n->as_array();
    if (!a) fail("expected a list of the values to sweep (\"optim.lr\" = [1e-3, 3e-3]), found " +
                 std::string(toml_config::type_name(*n)));
    if (a->empty()) fail("expected at least one value");
    if (a->size() > run_limits::kMaxSweepRuns)
      fail(std::to_string(a->size()) + " values; expected at most " + std::to_string(run_limits::kMaxSweepRuns) +
           " runs in one sweep");
    std::map<std::string, std::size_t> texts;  // each value's text -> its element number
    for (const toml::node& e : *a) {
      const std::string at = table.location(e, e.source()) + ": " + prefix + printable(written);
      SettingValue v = setting_value(e, at);
      const auto [it, added] = texts.emplace(setting_text(v), k.values.size() + 1);
      if (!added)
        throw Error(at + " = " + toml_config::repr(e) + ": listed twice (elements " + std::to_string(it->second) +
                    " and " + std::to_string(k.values.size() + 1) + "); expected each value once");
      k.values.push_back(std::move(v));
    }
    keys.push_back(std::move(k));
  }
  return keys;
}

// "t5@max_distance=64@optim.lr=0.001" -> "t5|optim.lr=0.001|position.max_distance=64": equal for two methods that
// set the same keys to the same values in any order.
std::string signature(const SweepMethod& m) {
  std::vector<std::string> settings;
  for (const ConfigSetting& s : m.settings) settings.push_back(s.key + "=" + setting_text(s.value));
  std::sort(settings.begin(), settings.end());
  std::string out = m.scheme;
  for (const std::string& s : settings) out += "|" + s;
  return out;
}

// The methods so far by signature: where each came from ("the method \"t5\" of sweep.methods").
using Seen = std::map<std::string, std::string>;

// The points of `method` over `keys` (the last key varying fastest), appended to `out`, each checked to be a
// method of its own.
void expand(toml_config::Table& table, const std::string& where, const SweepMethod& method,
            const std::vector<GridKey>& keys, int64_t dims, Seen& seen, std::vector<SweepMethod>& out) {
  std::vector<std::size_t> at(keys.size(), 0);
  for (;;) {
    std::string text = method.text;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const std::string value = setting_text(keys[k].values[at[k]]);
      if (value.find('@') != std::string::npos)
        throw Error(table.location(*keys[k].list, keys[k].list->source()) + ": " + where + printable(keys[k].written) +
                    ": the value " + printable(value) + " has an '@', which would end its method's setting");
      text += "@" + keys[k].written + "=" + value;
    }
    SweepMethod point = parse_method(table, text, dims);
    const auto [it, added] = seen.emplace(signature(point), "the point \"" + printable(text) + "\" of " + where + "methods");
    if (!added)
      table.fail_at("methods", "the point \"" + printable(text) + "\" sets what " + it->second + " sets: each method once");
    out.push_back(std::move(point));
    std::size_t k = keys.size();
    while (k > 0 && ++at[k - 1] == keys[k - 1].values.size()) at[--k] = 0;
    if (k == 0) return;
  }
}

// Refuses a key that a method of the grid sets itself or does not read.
void check_methods_read(const toml_config::Table& table, const std::string& where,
                        const std::vector<SweepMethod>& methods, const std::vector<GridKey>& keys, int64_t dims) {
  for (const GridKey& k : keys) {
    const std::string at = table.location(*k.list, k.list->source()) + ": " + where + printable(k.written) + ": ";
    for (const SweepMethod& m : methods) {
      for (const ConfigSetting& s : m.settings)
        if (s.key == k.dotted) throw Error(at + "the method \"" + printable(m.text) + "\" sets " + k.dotted + " itself");
      if (scheme_reads(*nn::find_scheme(m.scheme, dims), k.dotted, dims)) continue;
      std::vector<std::string> readers;
      for (const nn::SchemeInfo& s : nn::schemes())
        if (s.fits(dims) && scheme_reads(s, k.dotted, dims)) readers.emplace_back(s.name);
      throw Error(at + m.scheme + " does not read " + k.dotted + ": its runs would be the same for every value; " +
                  (readers.empty() ? std::string("no scheme of the sweep reads it")
                                   : "sweep it for " + join(readers, ", ") + " in a [[sweep.grid]] of their own"));
    }
  }
}

}  // namespace

std::vector<SweepMethod> grid_methods(const toml::node& grid, const GridContext& context) {
  const toml::array* grids = grid.as_array();
  if (!grids || !grids->is_array_of_tables())
    throw Error(toml_config::node_location(grid, context.source, context.applied) +
                ": sweep.grid: expected [[sweep.grid]] tables, each with methods and the lists of values to sweep");
  if (grids->size() > run_limits::kMaxSweepGrids)
    throw Error(toml_config::node_location(grid, context.source, context.applied) + ": sweep.grid: " +
                std::to_string(grids->size()) + " [[sweep.grid]] tables; expected at most " +
                std::to_string(run_limits::kMaxSweepGrids));
  std::vector<SweepMethod> out;
  Seen seen;
  for (const SweepMethod& m : context.listed)
    seen.emplace(signature(m), "the method \"" + printable(m.text) + "\" of sweep.methods");
  for (std::size_t i = 0; i < grids->size(); ++i) {
    const toml::table& t = *grids->get(i)->as_table();
    const std::string where = "sweep.grid[" + std::to_string(i) + "].";  // errors' key prefix
    toml_config::Table table(&t, where, context.source, context.applied);
    if (!table.has("methods"))
      table.fail_at("methods", "expected the methods the grid sweeps (methods = [\"t5\"])");
    std::vector<std::string> names;
    table.get("methods", names, {}, run_limits::kMaxSweepMethods);
    std::vector<SweepMethod> methods;
    for (const std::string& name : names) methods.push_back(parse_method(table, name, context.dims));
    const std::vector<GridKey> keys = read_keys(t, table, where, context);
    if (keys.empty())
      table.fail_at("methods", "expected at least one key to sweep beside methods (\"optim.lr\" = [1e-3, 3e-3])");
    std::size_t points = methods.size();
    for (const GridKey& k : keys) {
      points *= k.values.size();  // <= kMaxSweepRuns x the values of one list: no overflow
      if (points + out.size() > run_limits::kMaxSweepRuns)
        throw Error(table.location(*k.list, k.list->source()) + ": " + where + printable(k.written) +
                    ": the grids make more than " + std::to_string(run_limits::kMaxSweepRuns) +
                    " methods; expected at most " + std::to_string(run_limits::kMaxSweepRuns) +
                    " runs in one sweep");
    }
    check_methods_read(table, where, methods, keys, context.dims);
    for (const SweepMethod& m : methods) expand(table, where, m, keys, context.dims, seen, out);
  }
  return out;
}

toml::table nested_grids(const toml::table& sweep) {
  toml::table out = sweep;
  toml::array* grids = out["grid"].as_array();
  if (!grids || !grids->is_array_of_tables()) return out;
  for (toml::node& g : *grids) {
    toml::table& t = *g.as_table();
    std::vector<std::pair<std::string, const toml::node*>> found;
    collect(t, "", found);
    toml::table nested;
    if (const toml::node* m = t.get("methods")) nested.insert("methods", *m);
    toml_config::OverrideMap unused;
    for (const auto& [key, n] : found) toml_config::set_value(nested, key, *n, unused, "a sweep grid");
    t = std::move(nested);
  }
  return out;
}

}  // namespace rpb
