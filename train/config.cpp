#include "train/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/rng.h"
#include "nn/grid_model.h"
#include "nn/position.h"

namespace rpb {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

// Nodes inserted by --set: copies lose their source region, so errors name the --set instead.
using OverrideMap = std::map<const toml::node*, std::string>;

std::string where(const toml::source_region& r, const std::string& fallback) {
  std::ostringstream os;
  os << (r.path ? *r.path : fallback);
  if (r.begin.line > 0) os << ":" << r.begin.line << ":" << r.begin.column;
  return os.str();
}

std::string repr(const toml::node& n) {
  std::ostringstream os;
  if (n.is_string()) os << '"' << *n.value<std::string>() << '"';
  else if (n.is_table()) os << "a table";
  else if (n.is_array()) os << "an array";
  else if (n.is_floating_point() && std::isfinite(*n.value<double>())) {
    // The shortest text that reads back as the same double (-0.1, not toml++'s -0.10000000000000001).
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, *n.value<double>()).ptr;
    std::string text(buf, end);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    os << text;
  } else n.visit([&](auto&& v) { os << v; });
  return os.str();
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

// Reads one table: each get() consumes a key; done() rejects the keys nobody asked for.
class Table {
 public:
  Table(const toml::table* t, std::string prefix, const std::string& source, const OverrideMap& overrides)
      : t_(t), prefix_(std::move(prefix)), source_(source), overrides_(&overrides) {}

  bool has(const char* key) const { return t_ && t_->contains(key); }

  void get(const char* key, int64_t& out, int64_t lo, int64_t hi) {
    const toml::node* n = node(key);
    if (!n) return;
    if (!n->is_integer()) fail(key, *n, range_text(lo, hi));
    out = *n->value<int64_t>();
    if (out < lo || out > hi) fail(key, *n, range_text(lo, hi), false);
  }
  void get(const char* key, uint64_t& out) {
    int64_t v = static_cast<int64_t>(out);
    get(key, v, 0, INT64_MAX);
    out = static_cast<uint64_t>(v);
  }
  /// A float in [lo, hi] (or (lo, hi] when lo_open).
  void get(const char* key, double& out, double lo, double hi, bool lo_open = false, bool hi_open = false) {
    const toml::node* n = node(key);
    if (!n) return;
    if (!n->is_number()) fail(key, *n, "expected a number");
    out = n->is_integer() ? static_cast<double>(*n->value<int64_t>()) : *n->value<double>();
    const bool ok = (lo_open ? out > lo : out >= lo) && (hi_open ? out < hi : out <= hi);
    if (!ok) {
      std::ostringstream os;
      os << "expected a value in " << (lo_open ? "(" : "[") << lo << ", " << hi << (hi_open ? ")" : "]");
      fail(key, *n, os.str(), false);
    }
  }
  void get(const char* key, bool& out) {
    const toml::node* n = node(key);
    if (!n) return;
    if (!n->is_boolean()) fail(key, *n, "expected true or false");
    out = *n->value<bool>();
  }
  void get(const char* key, std::string& out, const std::vector<std::string>& allowed = {}) {
    const toml::node* n = node(key);
    if (!n) return;
    if (!n->is_string()) fail(key, *n, "expected a string");
    out = *n->value<std::string>();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), out) == allowed.end())
      fail(key, *n, "expected one of " + join(allowed) + suggestion(out, allowed), false);
  }
  void get(const char* key, std::vector<int64_t>& out, int64_t lo, int64_t hi) {
    const toml::node* n = node(key);
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a || a->empty()) fail(key, *n, "expected a non-empty array of integers");
    out.clear();
    for (const toml::node& e : *a) {
      if (!e.is_integer()) fail(key, e, "expected an integer array element");
      const int64_t v = *e.value<int64_t>();
      if (v < lo || v > hi) fail(key, e, range_text(lo, hi), false);
      out.push_back(v);
    }
  }
  void get(const char* key, std::vector<uint64_t>& out) {
    std::vector<int64_t> v;
    get(key, v, 0, INT64_MAX);
    if (has(key)) out.assign(v.begin(), v.end());
  }
  void get(const char* key, std::vector<std::string>& out, const std::vector<std::string>& allowed) {
    const toml::node* n = node(key);
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a || a->empty()) fail(key, *n, "expected a non-empty array of strings");
    out.clear();
    for (const toml::node& e : *a) {
      if (!e.is_string()) fail(key, e, "expected a string array element");
      const std::string v = *e.value<std::string>();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        fail(key, e, "expected one of " + join(allowed) + suggestion(v, allowed), false);
      out.push_back(v);
    }
  }

  /// Fails at `key` (or at the table when the key is absent) with `what`.
  [[noreturn]] void fail_at(const char* key, const std::string& what) const {
    const toml::node* n = t_ ? t_->get(key) : nullptr;
    if (n) fail(key, *n, what, false);
    throw Error(where(t_ ? t_->source() : toml::source_region{}, source_) + ": " + prefix_ + key + ": " + what);
  }

  std::string location(const toml::node& n, const toml::source_region& r) const {
    const auto it = overrides_->find(&n);
    return it != overrides_->end() ? "--set " + it->second : where(r, source_);
  }

  void done() const {
    if (!t_) return;
    for (auto&& [k, v] : *t_) {
      const std::string key(k.str());
      if (seen_.count(key)) continue;
      std::vector<std::string> known(seen_.begin(), seen_.end());
      known.insert(known.end(), ignored_.begin(), ignored_.end());
      if (std::find(ignored_.begin(), ignored_.end(), key) != ignored_.end()) continue;
      throw Error(location(v, k.source()) + ": unknown key " + prefix_ + key + suggestion(key, known));
    }
  }

  /// Keys read elsewhere (sub-tables handled by another reader).
  void ignore(const std::string& key) { ignored_.push_back(key); }
  /// Registers a key as known even if this reader never asks for its value.
  void know(const char* key) { seen_.insert(key); }

 private:
  const toml::node* node(const char* key) {
    seen_.insert(key);
    return t_ ? t_->get(key) : nullptr;
  }
  /// A wrong type names what was found; a wrong value only what was expected.
  [[noreturn]] void fail(const char* key, const toml::node& n, const std::string& what, bool wrong_type = true) const {
    throw Error(location(n, n.source()) + ": " + prefix_ + key + " = " + repr(n) + ": " + what +
                (wrong_type ? std::string(", found ") + type_name(n) : std::string()));
  }
  static std::string range_text(int64_t lo, int64_t hi) {
    std::ostringstream os;
    if (hi == INT64_MAX) os << "expected an integer >= " << lo;
    else os << "expected an integer in [" << lo << ", " << hi << "]";
    return os.str();
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }
  std::string suggestion(const std::string& key, const std::vector<std::string>& known) const {
    std::string best;
    int bd = 1 << 30;
    for (const auto& k : known) {
      const int d = edit_distance(key, k);
      if (d < bd) bd = d, best = k;
    }
    if (best.empty() || bd > std::max<int>(2, static_cast<int>(key.size()) / 3)) return "";
    return " (did you mean " + prefix_ + best + "?)";
  }

  const toml::table* t_;
  std::string prefix_;
  std::string source_;
  const OverrideMap* overrides_;
  std::set<std::string> seen_;
  std::vector<std::string> ignored_;
};

const toml::table* subtable(const toml::table& root, const char* name, const std::string& source) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table())
    throw Error(where(n->source(), source) + ": " + name + " = " + repr(*n) + ": expected a table [" + name + "], found " +
                type_name(*n));
  return n->as_table();
}

// Applies "a.b.c=value" to the root table; the value is TOML.
void apply_override(toml::table& root, const std::string& spec, OverrideMap& applied) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--set " + spec + ": expected key=value (e.g. --set model.d_model=256)");
  const std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  // A bare word (--set position.scheme=alibi) is a string, as a shell user means it; anything
  // else must be a TOML value. The schema still checks the type afterwards.
  const bool bare_word = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' || ch == '/';
  }) && !std::isdigit(static_cast<unsigned char>(value[0])) && value[0] != '-' && value[0] != '.' &&
                         value != "true" && value != "false" && value != "inf" && value != "nan";
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + (bare_word ? "\"" + value + "\"" : value), std::string_view("--set " + key));
  } catch (const toml::parse_error& e) {
    throw Error("--set " + spec + ": the value is not TOML (" + std::string(e.description()) +
                "); quote strings with spaces: --set " + key + "='\"some text\"'");
  }
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  toml::table* t = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!t->contains(parts[i])) t->insert(parts[i], toml::table{});
    toml::node* n = t->get(parts[i]);
    if (!n->is_table()) throw Error("--set " + spec + ": " + parts[i] + " is not a table");
    t = n->as_table();
  }
  t->insert_or_assign(parts.back(), *parsed.get("value"));
  applied[t->get(parts.back())] = spec;
}

}  // namespace

RunConfig parse_config(const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw Error(where(e.source(), source) + ": TOML syntax error: " + std::string(e.description()));
  }
  OverrideMap applied;
  for (const std::string& o : overrides) apply_override(root, o, applied);

  RunConfig c;
  c.source = source;
  Table top(&root, "", source, applied);
  for (const char* t : {"run", "model", "position", "task", "grid", "optim", "sweep"}) top.know(t);
  top.done();

  Table run(subtable(root, "run", source), "run.", source, applied);
  run.get("name", c.name);
  if (c.name.empty() || c.name.find('/') != std::string::npos || c.name == "." || c.name == "..")
    run.fail_at("name", "expected a folder name without '/'");
  run.get("out_dir", c.out_dir);
  run.get("seed", c.seed);
  run.get("steps", c.steps, 1, INT64_MAX);
  run.get("batch", c.batch, 1, 1 << 20);
  run.get("length", c.length, 1, 1 << 20);
  run.get("log_every", c.log_every, 1, INT64_MAX);
  run.get("checkpoint_every", c.checkpoint_every, 0, INT64_MAX);
  run.get("eval_multipliers", c.eval_multipliers, 1, 1024);
  run.get("eval_tokens", c.eval_tokens, 1, INT64_MAX);
  run.get("eval_batch", c.eval_batch, 1, 1 << 20);
  run.get("on_nonfinite", c.on_nonfinite, {"stop", "skip"});
  run.done();

  nn::TransformerOptions& m = c.model;
  Table model(subtable(root, "model", source), "model.", source, applied);
  model.get("d_model", m.d_model, 1, 1 << 16);
  model.get("heads", m.heads, 1, 1024);
  model.get("layers", m.layers, 1, 1024);
  model.get("d_ff", m.d_ff, 1, 1 << 20);
  model.get("dropout", m.dropout, 0.0, 1.0, false, true);
  model.get("tie_head", m.tie_head);
  model.get("share_position", m.share_position);
  model.get("attn_scale", m.attn_scale, 0.0, 1e6);
  model.get("fused_attention", m.fused_attention);
  model.get("init_std", m.init_std, 0.0, 10.0, true);
  std::string gelu = m.gelu == GeluApprox::tanh ? "tanh" : "erf";
  model.get("gelu", gelu, {"tanh", "erf"});
  m.gelu = gelu == "tanh" ? GeluApprox::tanh : GeluApprox::erf;
  if (m.d_model % m.heads != 0)
    model.fail_at("heads", "heads " + std::to_string(m.heads) + " must divide model.d_model " + std::to_string(m.d_model));
  model.done();

  data::TaskOptions& t = c.task;
  Table task(subtable(root, "task", source), "task.", source, applied);
  task.get("kind", t.kind, {"markov", "lag", "kjv", "grid2d"});
  task.get("vocab", t.vocab, 2, 1 << 16);
  task.get("order", t.order, 1, 16);
  task.get("concentration", t.concentration, 0.0, 1e6, true);
  task.get("lag", t.lag, 1, 1 << 20);
  task.get("noise", t.noise, 0.0, 1.0);
  task.get("seed", t.seed);
  task.get("train_tokens", t.train_tokens, 2, INT64_MAX);
  task.get("eval_tokens", t.eval_tokens, 2, INT64_MAX);
  task.get("kjv_path", t.kjv_path);
  task.done();

  nn::PositionOptions& p = m.position;
  Table pos(subtable(root, "position", source), "position.", source, applied);
  const bool grid = t.kind == "grid2d";
  if (grid && !pos.has("scheme")) p.scheme = "swin";
  pos.get("scheme", p.scheme, grid ? nn::grid_scheme_names() : nn::position_scheme_names());
  pos.get("num_buckets", p.num_buckets, 2, 1 << 16);
  pos.get("max_distance", p.max_distance, 1, INT64_MAX);
  pos.get("max_relative_position", p.max_relative_position, 1, 1 << 20);
  pos.get("lambda", p.lambda, 0.0, 1e6);
  pos.get("learnable_lambda", p.learnable_lambda);
  pos.get("max_positions", p.max_positions, 1, 1 << 24);
  pos.get("rope_base", p.rope_base, 1.0, 1e12, true);
  pos.get("init_std", p.init_std, 0.0, 10.0, true);
  if (p.scheme == "learned" && p.max_positions < c.length)
    pos.fail_at("max_positions", "the learned table needs at least run.length = " + std::to_string(c.length) +
                                     " positions, got " + std::to_string(p.max_positions));
  if (!grid) {
    // The scheme's own checks (num_buckets parity, max_distance above max_exact, ...), reported at [position].
    nn::PositionOptions probe = p;
    probe.heads = m.heads;
    probe.d_model = m.d_model;
    probe.head_dim = m.d_model / m.heads;
    probe.causal = m.causal;
    // The probe builds the scheme, tables included: the options that only size a table (each valid
    // from 1 up, and named in no message) are cut to 1, so checking a config allocates at most
    // d_model or num_buckets values (a learned 2^24 x 2^16 table is 4 TiB).
    probe.heads = 1;
    probe.max_positions = 1;
    probe.max_relative_position = 1;
    Generator g(0);
    try {
      nn::make_position_scheme(probe, g);
    } catch (const Error& e) {
      // "t5: max_distance 8 must be above max_exact 16 (num_buckets/2) [nn/position.cpp:63]": reported
      // at the key it names when the file sets it (else at the scheme), without the source location.
      std::string what = e.what();
      what = what.substr(0, what.rfind(" ["));
      if (const auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
      const char* key = "scheme";
      for (const char* k : {"num_buckets", "max_distance", "max_relative_position", "lambda", "max_positions",
                            "rope_base", "init_std"})
        if (what.rfind(std::string(k) + " ", 0) == 0 && pos.has(k)) key = k;
      pos.fail_at(key, "invalid for scheme " + p.scheme + ": " + what);
    }
  }
  pos.done();

  GridConfig& gc = c.grid;
  Table gt(subtable(root, "grid", source), "grid.", source, applied);
  gt.get("window", gc.window, 1, 1024);
  gt.get("shift", gc.shift);
  gt.get("cpb_hidden", gc.cpb_hidden, 1, 1 << 16);
  gt.get("max_side", gc.max_side, 1, 1 << 16);
  gt.get("eval_window", gc.eval_window, 0, 1024);
  if (grid && p.scheme == "learned2d" && gc.max_side < c.length)
    gt.fail_at("max_side", "the learned2d table needs at least run.length = " + std::to_string(c.length) +
                               " cells per side, got " + std::to_string(gc.max_side));
  if (gc.eval_window > 0 && !(grid && nn::is_window_scheme(p.scheme)))
    gt.fail_at("eval_window", "only the windowed 2-D schemes (swin, swin_v2) have a window to change");
  gt.done();


  OptimConfig& o = c.optim;
  const toml::table* ot = subtable(root, "optim", source);
  Table opt(ot, "optim.", source, applied);
  opt.get("kind", o.kind, {"adamw", "adam", "sgd"});
  opt.get("lr", o.schedule.lr, 0.0, 1e3, true);
  opt.get("schedule", o.schedule.kind, {"constant", "cosine"});
  opt.get("warmup_steps", o.schedule.warmup_steps, 0, INT64_MAX);
  opt.get("min_lr_ratio", o.schedule.min_lr_ratio, 0.0, 1.0);
  opt.get("beta1", o.adam.beta1, 0.0, 1.0, false, true);
  opt.get("beta2", o.adam.beta2, 0.0, 1.0, false, true);
  opt.get("eps", o.adam.eps, 0.0, 1.0, true);
  double wd = o.kind == "adamw" ? 0.01 : 0.0;
  opt.get("weight_decay", wd, 0.0, 1e3);
  opt.get("momentum", o.sgd.momentum, 0.0, 1.0, false, true);
  opt.get("grad_clip", o.grad_clip, 0.0, 1e12);
  o.adam.weight_decay = o.sgd.weight_decay = wd;
  o.adam.decoupled = o.kind != "adam";
  o.schedule.total_steps = c.steps;
  if (o.schedule.kind == "cosine" && o.schedule.warmup_steps >= c.steps)
    opt.fail_at("warmup_steps", "expected fewer warm-up steps than run.steps = " + std::to_string(c.steps));
  opt.ignore("group");
  std::vector<optim::GroupRule> groups;
  if (ot && ot->contains("group")) {
    const toml::node* gn = ot->get("group");
    const toml::array* ga = gn->as_array();
    if (!ga || !ga->is_array_of_tables())
      throw Error(where(gn->source(), source) + ": optim.group: expected [[optim.group]] tables");
    for (const toml::node& e : *ga) {
      Table g(e.as_table(), "optim.group.", source, applied);
      optim::GroupRule r;
      r.weight_decay = wd;
      g.get("pattern", r.pattern);
      if (r.pattern.empty()) g.fail_at("pattern", "expected a non-empty glob over parameter names");
      g.get("weight_decay", r.weight_decay, 0.0, 1e3);
      g.get("lr_scale", r.lr_scale, 0.0, 1e6);
      g.done();
      groups.push_back(r);
    }
  }
  o.adam.groups = o.sgd.groups = groups;
  opt.done();

  Table sweep(subtable(root, "sweep", source), "sweep.", source, applied);
  // Methods are scheme names; "swin_v2@window8" evaluates the finished swin_v2 run with grid.eval_window = 8.
  sweep.get("methods", c.sweep.methods, {});
  sweep.get("seeds", c.sweep.seeds);
  sweep.get("tasks", c.sweep.tasks, {"markov", "lag", "kjv", "grid2d"});
  const std::vector<std::string> tasks = c.sweep.tasks.empty() ? std::vector<std::string>{t.kind} : c.sweep.tasks;
  const bool grid_sweep = std::find(tasks.begin(), tasks.end(), "grid2d") != tasks.end();
  if (grid_sweep && tasks.size() > 1)
    sweep.fail_at("tasks", "grid2d needs the 2-D schemes; sweep it on its own");
  const std::vector<std::string>& names = grid_sweep ? nn::grid_scheme_names() : nn::position_scheme_names();
  if (!sweep.has("methods")) c.sweep.methods = names;  // the default sweep: every scheme of the task's kind
  for (const std::string& m : c.sweep.methods) {
    const auto at = m.find("@window");
    const std::string base = m.substr(0, at);
    std::string what;
    if (std::find(names.begin(), names.end(), base) == names.end()) {
      what = "\"" + m + "\": expected one of";
      for (const auto& n : names) what += " " + n;
      what += grid_sweep ? " (2-D task)" : " (1-D task)";
    } else if (at != std::string::npos) {
      const std::string n = m.substr(at + 7);
      if (!nn::is_window_scheme(base) || n.empty() || n.size() > 4 ||
          !std::all_of(n.begin(), n.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) ||
          std::stoi(n) < 1)
        what = "\"" + m + "\": expected swin@window<N> or swin_v2@window<N> with N >= 1";
    }
    if (!what.empty()) sweep.fail_at("methods", what);
  }
  sweep.done();

  std::ostringstream os;
  os << root;
  c.text = os.str();
  return c;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw Error("config " + path + ": cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path, overrides);
}

}  // namespace rpb
