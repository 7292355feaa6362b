// rpb/train/config/run_identity.cpp: see run_identity.h.
#include "train/config/run_identity.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "nn/position.h"
#include "train/config/toml_depth.h"
#include "train/config/toml_table.h"
#include "train/io/sha256.h"

namespace rpb {

namespace {

toml::table parse_effective(const std::string& text) {
  check_toml_depth(text, "config identity");
  try {
    return toml::parse(text);
  } catch (const toml::parse_error& e) {
    throw Error(std::string("config identity: not a TOML document: ") + std::string(e.description()));
  }
}

// Removes the dotted key `key` ("run.name", or a whole table: "sweep") from `t`.
void erase_key(toml::table& t, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    t.erase(key);
    return;
  }
  if (toml::table* sub = t[key.substr(0, dot)].as_table()) erase_key(*sub, key.substr(dot + 1));
}

toml::table identity_table(const std::string& effective_text) {
  toml::table t = parse_effective(effective_text);
  for (const std::string& key : non_identity_keys()) erase_key(t, key);
  for (const LegacyKey& k : legacy_keys())
    if (toml::table* sub = t[k.table].as_table(); sub && !sub->contains(k.key)) sub->insert(k.key, std::string(k.value));
  // model.embedding = "scheme" is the recipe it resolves to: a run is equal to one that names that recipe.
  if (toml::table* model = t["model"].as_table(); model && (*model)["embedding"].value_or(std::string()) == "scheme") {
    const std::string scheme = t["position"]["scheme"].value_or(std::string());
    const int64_t dims = data::task_dims(t["task"]["kind"].value_or(std::string("markov")));
    model->insert_or_assign("embedding", nn::recipe_name(nn::resolve_recipe(nn::EmbeddingRecipe::scheme, scheme, dims)));
  }
  // optim.total_steps = 0 means run.steps: the identity holds the horizon it resolves to.
  if (toml::table* optim = t["optim"].as_table(); optim && (*optim)["total_steps"].value_or(int64_t{0}) == 0)
    optim->insert_or_assign("total_steps", t["run"]["steps"].value_or(int64_t{0}));
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

int64_t raw_total_steps(const std::string& effective_text) {
  return parse_effective(effective_text)["optim"]["total_steps"].value_or(int64_t{0});
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

const std::vector<std::string>& non_identity_keys() {
  static const std::vector<std::string> keys = {
      "run.name",          "run.out_dir",       "run.log_every",   "run.checkpoint_every", "run.eval_multipliers",
      "run.eval_tokens",   "run.eval_batch",    "run.eval_every",  "run.eval_diagnostics", "run.valid_multipliers",
      "run.valid_tokens",  "grid.eval_window",  "position.untrained", "task.kjv_path", "sweep"};
  return keys;
}

std::string identity_text(const std::string& effective_text) {
  return toml_config::document_text(identity_table(effective_text));
}

std::string config_digest(const std::string& effective_text) { return sha256_hex(identity_text(effective_text)); }

std::string digest_line(const std::string& effective_text) {
  return "# config_digest = " + config_digest(effective_text) +
         " (SHA-256 of the keys that make the run; see rpb/train/config/run_identity.h)\n";
}

std::vector<ConfigChange> identity_changes(const std::string& before, const std::string& after) {
  std::map<std::string, std::string> a, b;
  flatten(identity_table(before), "", a);
  flatten(identity_table(after), "", b);
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
             raw_total_steps(before) == 0 && raw_total_steps(after) == 0;
    });
  return changes;
}

RunMatch match_run(const std::string& stored, const std::string& file, const RunConfig& config, bool extend) {
  const RunConfig old = parse_stored_config(stored, file + " (stored config)");
  RunMatch m{config, {}, false, old.steps};
  const bool steps_differ = config.steps != old.steps;
  // A run keeps its schedule's horizon: the one it was extended with, or with --extend the one it was started with.
  if (raw_total_steps(config.text) == 0 && (raw_total_steps(old.text) > 0 || (extend && steps_differ))) {
    try {
      m.config = parse_config(config.text, config.source,
                              {"optim.total_steps=" + std::to_string(old.optim.schedule.total_steps)});
    } catch (const Error&) {
      // The old horizon does not fit this config (more warm-up steps): the changes below name the difference.
    }
  }
  m.changes = identity_changes(old.text, m.config.text);
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
