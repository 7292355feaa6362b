// rpb/train/config.cpp: the run config's schema, one reader per TOML table ([run], [model], [task], [grid],
// [position], [optim] with [[optim.group]], [sweep]), on top of train/toml_table.h.
#include "train/config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nn/position.h"
#include "train/toml_table.h"

namespace rpb {

using toml_config::OverrideMap;
using toml_config::Table;

namespace {

// The tables of one document, read in turn; each reader takes what it needs from the config read so far.
struct Reader {
  const toml::table& root;
  const std::string& source;
  const OverrideMap& applied;
  Table table(const char* name) const {
    return Table(toml_config::subtable(root, name, source), std::string(name) + ".", source, applied);
  }
};

void read_run(Table& run, RunConfig& c) {
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
}

void read_model(Table& model, nn::TransformerOptions& m) {
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
}

void read_task(Table& task, data::TaskOptions& t) {
  task.get("kind", t.kind, data::task_kinds());
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
}

// [grid]'s values; its checks that depend on the scheme come after [position] (check_grid).
void read_grid(Table& grid, GridConfig& g, nn::PositionOptions& p) {
  grid.get("window", g.window, 1, 1024);
  grid.get("shift", g.shift);
  grid.get("cpb_hidden", g.cpb_hidden, 1, 1 << 16);
  grid.get("max_side", p.max_side, 1, 1 << 16);
  grid.get("eval_window", g.eval_window, 0, 1024);
}

// [position], and the scheme's own checks on the whole model's position options: an rpb::OptionError names
// the option at fault, reported at its key when the config sets it (else at position.scheme).
void read_position(Table& pos, Table& grid, RunConfig& c) {
  nn::PositionOptions& p = c.model.position;
  const int64_t dims = c.dims();
  if (dims == 2 && !pos.has("scheme")) p.scheme = "swin";
  pos.get("scheme", p.scheme, nn::scheme_names(dims));
  pos.get("num_buckets", p.num_buckets, 2, 1 << 16);
  pos.get("max_distance", p.max_distance, 1, INT64_MAX);
  pos.get("max_relative_position", p.max_relative_position, 1, 1 << 20);
  pos.get("lambda", p.lambda, 0.0, 1e6);
  pos.get("learnable_lambda", p.learnable_lambda);
  pos.get("max_positions", p.max_positions, 1, 1 << 24);
  pos.get("rope_base", p.rope_base, 1.0, 1e12, true);
  pos.get("init_std", p.init_std, 0.0, 10.0, true);
  const nn::PositionOptions po = c.position();
  const nn::SchemeInfo& info = nn::scheme_info(po);
  // The option that bounds the scheme's length lives in [grid] (max_side) or [position].
  auto table_of = [&](const std::string& field) -> Table& { return field == "max_side" ? grid : pos; };
  try {
    nn::validate(po);  // allocates nothing: the scheme is not built
  } catch (const OptionError& e) {
    Table& t = table_of(e.field());
    const std::string& key = t.has(e.field().c_str()) ? e.field() : std::string("scheme");
    (key == "scheme" ? pos : t).fail_at(key.c_str(), "invalid for scheme " + p.scheme + ": " + e.detail());
  }
  if (const int64_t limit = info.max_length(po); limit > 0 && limit < c.length)
    table_of(info.length_option)
        .fail_at(info.length_option, "the " + p.scheme + " table needs at least run.length = " + std::to_string(c.length) +
                                         (dims == 2 ? " cells per side" : " positions") + ", got " + std::to_string(limit));
  pos.done();
}

void check_grid(Table& grid, const RunConfig& c) {
  if (c.grid.eval_window > 0 && nn::scheme_info(c.position()).kind != nn::PositionKind::window)
    grid.fail_at("eval_window", "only the windowed 2-D schemes (swin, swin_v2) have a window to change");
  grid.done();
}

std::vector<optim::GroupRule> read_groups(const toml::table* ot, const Reader& r, double weight_decay) {
  std::vector<optim::GroupRule> groups;
  if (!ot || !ot->contains("group")) return groups;
  const toml::node* gn = ot->get("group");
  const toml::array* ga = gn->as_array();
  if (!ga || !ga->is_array_of_tables())
    throw Error(toml_config::where(gn->source(), r.source) + ": optim.group: expected [[optim.group]] tables");
  for (const toml::node& e : *ga) {
    Table g(e.as_table(), "optim.group.", r.source, r.applied);
    optim::GroupRule rule;
    rule.weight_decay = weight_decay;
    g.get("pattern", rule.pattern);
    if (rule.pattern.empty()) g.fail_at("pattern", "expected a non-empty glob over parameter names");
    g.get("weight_decay", rule.weight_decay, 0.0, 1e3);
    g.get("lr_scale", rule.lr_scale, 0.0, 1e6);
    g.done();
    groups.push_back(rule);
  }
  return groups;
}

void read_optim(const Reader& r, RunConfig& c) {
  OptimConfig& o = c.optim;
  const toml::table* ot = toml_config::subtable(r.root, "optim", r.source);
  Table opt(ot, "optim.", r.source, r.applied);
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
  o.adam.groups = o.sgd.groups = read_groups(ot, r, wd);
  opt.done();
}

// "swin_v2@window8" -> {swin_v2, 8}; the error names what was expected for the sweep's dims.
SweepMethod parse_method(Table& sweep, const std::string& text, int64_t dims) {
  const std::string tag = "@window";
  const auto at = text.find(tag);
  SweepMethod m{text.substr(0, at), 0};
  const nn::SchemeInfo* info = nn::find_scheme(m.scheme, dims);
  if (!info) {
    std::string what = "\"" + text + "\": expected one of";
    for (const std::string& n : nn::scheme_names(dims)) what += " " + n;
    sweep.fail_at("methods", what + (dims == 2 ? " (2-D task)" : " (1-D task)"));
  }
  if (at == std::string::npos) return m;
  const std::string n = text.substr(at + tag.size());
  const bool digits = !n.empty() && n.size() <= 4 &&
                      std::all_of(n.begin(), n.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
  if (info->kind != nn::PositionKind::window || !digits || std::stoi(n) < 1)
    sweep.fail_at("methods", "\"" + text + "\": expected swin@window<N> or swin_v2@window<N> with N >= 1");
  m.eval_window = std::stoi(n);
  return m;
}

void read_sweep(Table& sweep, RunConfig& c) {
  std::vector<std::string> methods;
  sweep.get("methods", methods, {});
  sweep.get("seeds", c.sweep.seeds);
  sweep.get("tasks", c.sweep.tasks, data::task_kinds());
  const std::vector<std::string> tasks = c.sweep.tasks.empty() ? std::vector<std::string>{c.task.kind} : c.sweep.tasks;
  const bool grid_sweep = std::any_of(tasks.begin(), tasks.end(), [](const std::string& t) { return data::task_dims(t) == 2; });
  if (grid_sweep && tasks.size() > 1) sweep.fail_at("tasks", "grid2d needs the 2-D schemes; sweep it on its own");
  const int64_t dims = grid_sweep ? 2 : 1;
  if (!sweep.has("methods")) methods = nn::scheme_names(dims);  // the default sweep: every scheme of the tasks' dims
  c.sweep.methods.clear();
  for (const std::string& m : methods) c.sweep.methods.push_back(parse_method(sweep, m, dims));
  sweep.done();
}

RunConfig parse_document(toml::table& root, const std::string& source, const OverrideMap& applied) {
  RunConfig c;
  c.source = source;
  const Reader r{root, source, applied};
  Table top(&root, "", source, applied);
  for (const char* t : {"run", "model", "position", "task", "grid", "optim", "sweep"}) top.know(t);
  top.done();

  Table run = r.table("run"), model = r.table("model"), task = r.table("task"), grid = r.table("grid"),
        pos = r.table("position"), sweep = r.table("sweep");
  read_run(run, c);
  read_model(model, c.model);
  read_task(task, c.task);
  read_grid(grid, c.grid, c.model.position);
  read_position(pos, grid, c);
  check_grid(grid, c);
  read_optim(r, c);
  read_sweep(sweep, c);

  std::ostringstream os;
  os << root;
  c.text = os.str();
  return c;
}

toml::table parse_text(const std::string& text, const std::string& source) {
  try {
    return toml::parse(text, std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw Error(toml_config::where(e.source(), source) + ": TOML syntax error: " + std::string(e.description()));
  }
}

// The table `name` of `root`, created when absent.
toml::table& table_in(toml::table& root, const char* name) {
  if (!root.contains(name)) root.insert(name, toml::table{});
  return *root.get(name)->as_table();
}

}  // namespace

std::string SweepMethod::name() const {
  return eval_window > 0 ? scheme + "@window" + std::to_string(eval_window) : scheme;
}

std::string SweepMethod::label() const {
  const nn::SchemeInfo* info = nullptr;
  for (const nn::SchemeInfo& s : nn::schemes())
    if (scheme == s.name) info = &s;
  const std::string base = info ? info->label : scheme;
  return eval_window > 0 ? base + ", eval window " + std::to_string(eval_window) : base;
}

std::string RunConfig::run_dir() const { return (std::filesystem::path(out_dir) / name).string(); }

RunConfig run_config(const RunConfig& sweep, const SweepRun& run) {
  toml::table root = parse_text(sweep.text, sweep.source);
  toml::table& r = table_in(root, "run");
  r.insert_or_assign("out_dir", run.out_dir);
  r.insert_or_assign("name", run.name);
  r.insert_or_assign("seed", static_cast<int64_t>(run.seed));
  table_in(root, "position").insert_or_assign("scheme", run.method.scheme);
  table_in(root, "task").insert_or_assign("kind", run.task);
  if (run.method.eval_window > 0) table_in(root, "grid").insert_or_assign("eval_window", run.method.eval_window);
  return parse_document(root, sweep.source, OverrideMap{});
}

RunConfig parse_config(const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
  toml::table root = parse_text(text, source);
  OverrideMap applied;
  for (const std::string& o : overrides) toml_config::apply_override(root, o, applied);
  return parse_document(root, source, applied);
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw Error("config " + path + ": cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path, overrides);
}

}  // namespace rpb
