// rpb/train/config/run_identity.cpp: see run_identity.h.
#include "train/config/run_identity.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "train/config/config_keys.h"
#include "train/config/document.h"
#include "train/config/toml_table.h"
#include "train/io/sha256.h"

namespace rpb {

namespace {

// Removes the dotted key `key` ("run.name", or a whole table: "sweep") from `t`.
void erase_key(toml::table& t, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    t.erase(key);
    return;
  }
  if (toml::table* sub = t[key.substr(0, dot)].as_table()) erase_key(*sub, key.substr(dot + 1));
}

// The node at the dotted `key` of `t` ("optim.total_steps"), null when absent.
const toml::node* find_key(const toml::table& t, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) return t.get(key);
  const toml::table* sub = t[key.substr(0, dot)].as_table();
  return sub ? find_key(*sub, key.substr(dot + 1)) : nullptr;
}

toml::table identity_table(const RunConfig& c, const std::vector<AddedKey>& added) {
  toml::table t = config_keys::write_effective(c);  // the typed values, as the effective config writes them
  for (const std::string& key : non_identity_keys())
    if (c.init_from.empty() || !trains_in_fine_tune(key)) erase_key(t, key);  // a fine-tune trains with its scaling
  for (const AddedKey& k : added)
    if (const toml::node* n = find_key(t, k.key); n && toml_config::value_text(*n) == k.unset) erase_key(t, k.key);
  // model.embedding is the recipe the model is built with: "scheme" equals the recipe it resolves to.
  if (toml::table* model = t["model"].as_table()) model->insert_or_assign("embedding", nn::recipe_name(c.embedding_recipe()));
  // optim.total_steps is the horizon the schedule runs to: 0 equals run.steps.
  if (toml::table* optim = t["optim"].as_table()) optim->insert_or_assign("total_steps", c.optim.schedule.total_steps);
  return t;
}

// Every value of `t` by dotted key; the tables of an array of tables by index ("optim.group[0].pattern").
void flatten(const toml::table& t, const std::string& prefix, std::map<std::string, std::string>& out) {
  for (auto&& [k, v] : t) {
    const std::string key = prefix + std::string(k.str());
    if (const toml::table* sub = v.as_table()) flatten(*sub, key + ".", out);
    else if (v.is_array() && v.as_array()->is_array_of_tables() && !v.as_array()->empty()) {
      std::size_t i = 0;
      for (const toml::node& e : *v.as_array()) flatten(*e.as_table(), key + "[" + std::to_string(i++) + "].", out);
    } else out[key] = toml_config::value_text(v);
  }
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

const std::vector<std::string>& non_identity_keys() {
  static const std::vector<std::string> keys = [] {
    // The keys whose row says they make no run of their own (config_keys.h KeyRole, nn/position/options.h
    // OptionRole), and the [sweep] table.
    std::vector<std::string> k;
    for (const config_keys::ConfigKey& key : config_keys::config_keys())
      if (key.role == config_keys::KeyRole::outside) k.push_back(key.dotted());
    k.emplace_back("sweep");
    for (const nn::PositionOptionInfo& o : nn::position_option_table())
      if (o.role != nn::OptionRole::identity) k.push_back(std::string(o.table) + "." + o.key);
    return k;
  }();
  return keys;
}

bool trains_in_fine_tune(const std::string& key) {
  for (const nn::PositionOptionInfo& o : nn::position_option_table())
    if (o.role == nn::OptionRole::fine_tune && key == std::string(o.table) + "." + o.key) return true;
  return false;
}

const std::vector<AddedKey>& added_identity_keys() {
  static const std::vector<AddedKey> keys = {};  // the position options added later leave the effective config
                                                 // at their default instead (PositionOptionInfo::added)
  return keys;
}

std::string identity_text(const RunConfig& config, const std::vector<AddedKey>& added) {
  return toml_config::document_text(identity_table(config, added));
}

std::string config_digest(const RunConfig& config) { return sha256_hex(identity_text(config)); }

std::string digest_line(const RunConfig& config) {
  return "# config_digest = " + config_digest(config) +
         " (SHA-256 of the keys that make the run; see rpb/train/config/run_identity.h)\n";
}

std::vector<ConfigChange> identity_changes(const RunConfig& before, const RunConfig& after) {
  std::map<std::string, std::string> a, b;
  flatten(identity_table(before, added_identity_keys()), "", a);
  flatten(identity_table(after, added_identity_keys()), "", b);
  std::vector<ConfigChange> changes;
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    if (it == b.end()) changes.push_back({key, value, "(none)"});
    else if (it->second != value) changes.push_back({key, value, it->second});
  }
  for (const auto& [key, value] : b)
    if (!a.count(key)) changes.push_back({key, "(none)", value});
  std::sort(changes.begin(), changes.end(), [](const ConfigChange& x, const ConfigChange& y) { return x.key < y.key; });
  // optim.total_steps that follows run.steps (0) changes with it: only run.steps is news.
  const auto steps = std::find_if(changes.begin(), changes.end(), [](const ConfigChange& c) { return c.key == "run.steps"; });
  if (steps != changes.end())
    std::erase_if(changes, [&](const ConfigChange& c) {
      return c.key == "optim.total_steps" && c.before == steps->before && c.after == steps->after &&
             before.optim.total_steps == 0 && after.optim.total_steps == 0;
    });
  return changes;
}

RunMatch match_run(const std::string& stored, const std::string& file, const RunConfig& config, bool extend) {
  const RunConfig old = parse_stored_config(stored, file + " (stored config)");
  RunMatch m{config, {}, false, old.steps};
  const bool steps_differ = config.steps != old.steps;
  // A run keeps its schedule's horizon: the one it was extended with, or with --extend the one it was started with.
  if (config.optim.total_steps == 0 && (old.optim.total_steps > 0 || (extend && steps_differ))) {
    const int64_t horizon = old.optim.schedule.total_steps;
    try {
      m.config = derive_config(config, {{"optim.total_steps", {horizon}, std::to_string(horizon)}},
                               "--set optim.total_steps=" + std::to_string(horizon));
    } catch (const Error&) {
      // The old horizon does not fit this config (more warm-up steps): the changes below name the difference.
    }
  }
  m.changes = identity_changes(old, m.config);
  if (extend) {
    std::erase_if(m.changes, [](const ConfigChange& c) { return c.key == "run.steps"; });
    m.extended = steps_differ;
  }
  return m;
}

std::string changed_config_message(const std::string& op, const std::string& run_dir, const std::string& file,
                                   const std::vector<ConfigChange>& changes) {
  std::string msg = op + ": the config differs from the one " + file + " was trained with:";
  for (const ConfigChange& c : changes) msg += "\n  " + c.line();
  msg += "\n";
  if (op == "train" && changes.size() == 1 && changes.front().key == "run.steps")
    msg += "To train the run on to the new run.steps, pass --extend (the learning-rate schedule keeps the run's "
           "original horizon). ";
  return msg + "To start a new run instead, choose another run.name, or pass --overwrite to move " + run_dir +
         " aside (to " + run_dir + ".old-<UTC time>; nothing is deleted) and train afresh";
}

std::string extend_note(const RunConfig& config, int64_t from_steps) {
  const optim::ScheduleOptions& s = config.optim.schedule;
  std::string what;
  if (s.kind == optim::ScheduleKind::cosine)
    what = "the cosine reaches its floor min_lr = min_lr_ratio x lr = " + fmt_g(s.min_lr_ratio * s.lr) + " at step " +
           std::to_string(s.total_steps) + " and stays there";
  else
    what = "the constant rate stays at " + fmt_g(s.lr);
  return "--extend: run.steps " + std::to_string(from_steps) + " -> " + std::to_string(config.steps) +
         "; the learning-rate schedule keeps its horizon of " + std::to_string(s.total_steps) +
         " steps (optim.total_steps): " + what + ", and warm-up is not repeated";
}

}  // namespace rpb
