// rpb/train/config/config_optim.cpp: [optim] and its [[optim.group]] rules (train/config/config_detail.h).
#include <string>
#include <vector>

#include "train/config/config_detail.h"

namespace rpb::config_detail {

using toml_config::Table;
using namespace run_limits;

namespace {

// [[optim.group]]: each a glob over parameter names with its weight decay and learning-rate scale, in order.
std::vector<optim::GroupRule> read_groups(const toml::table* ot, const Reader& r, double weight_decay,
                                         std::vector<std::string>* accepted) {
  std::vector<optim::GroupRule> groups;
  if (!ot || !ot->contains("group")) return groups;
  toml::array effective;
  const toml::node* gn = ot->get("group");
  const toml::array* ga = gn->as_array();
  if (!ga || !ga->is_array_of_tables())
    throw Error(toml_config::node_location(*gn, r.source, r.applied) +
                ": optim.group: expected [[optim.group]] tables");
  for (const toml::node& e : *ga) {
    Table g(e.as_table(), "optim.group.", r.source, r.applied);
    toml::table out;
    g.write_to(out);
    optim::GroupRule rule;
    rule.weight_decay = weight_decay;
    g.get("pattern", rule.pattern);
    if (rule.pattern.empty()) g.fail_at("pattern", "expected a non-empty glob over parameter names");
    g.get("weight_decay", rule.weight_decay, 0.0, 1e3);
    g.get("lr_scale", rule.lr_scale, 0.0, 1e6);
    g.done();
    if (accepted)
      for (const std::string& k : g.seen()) accepted->push_back("optim.group." + k);
    effective.push_back(std::move(out));
    groups.push_back(rule);
  }
  table_in(r.effective, "optim").insert_or_assign("group", std::move(effective));
  return groups;
}

}  // namespace

Table read_optim(const Reader& r, RunConfig& c, std::vector<std::string>* accepted) {
  OptimConfig& o = c.optim;
  const toml::table* ot = toml_config::subtable(r.root, "optim", r.source, r.applied);
  Table opt(ot, "optim.", r.source, r.applied);
  opt.write_to(table_in(r.effective, "optim"));
  get_enum(opt, "kind", o.kind, kOptimizerKindNames);
  opt.get("lr", o.schedule.lr, 0.0, 1e3, true);
  get_enum(opt, "schedule", o.schedule.kind, optim::kScheduleKindNames);
  opt.get("warmup_steps", o.schedule.warmup_steps, 0, kMaxSteps);
  opt.get("min_lr_ratio", o.schedule.min_lr_ratio, 0.0, 1.0);
  opt.get("beta1", o.adam.beta1, 0.0, 1.0, false, true);
  opt.get("beta2", o.adam.beta2, 0.0, 1.0, false, true);
  opt.get("eps", o.adam.eps, 0.0, 1.0, true);
  double wd = o.kind == OptimizerKind::adamw ? 0.01 : 0.0;
  opt.get("weight_decay", wd, 0.0, 1e3);
  opt.get("momentum", o.sgd.momentum, 0.0, 1.0, false, true);
  opt.get("grad_clip", o.grad_clip, 0.0, 1e12);
  o.adam.weight_decay = o.sgd.weight_decay = wd;
  o.adam.decoupled = o.kind != OptimizerKind::adam;
  int64_t horizon = 0;  // 0: run.steps (train --extend sets the steps the run was started with)
  opt.get("total_steps", horizon, 0, kMaxSteps);
  o.total_steps = horizon;
  o.schedule.total_steps = horizon > 0 ? horizon : c.steps;
  if (o.schedule.kind == optim::ScheduleKind::cosine && o.schedule.warmup_steps >= o.schedule.total_steps)
    opt.fail_at("warmup_steps", "expected fewer warm-up steps than " +
                                    (horizon > 0 ? "optim.total_steps = " : std::string("run.steps = ")) +
                                    std::to_string(o.schedule.total_steps) +
                                    (horizon > 0 ? opt.set_by("total_steps") : r.table("run").set_by("steps")));
  opt.ignore("group");
  o.adam.groups = o.sgd.groups = read_groups(ot, r, wd, accepted);
  opt.done();
  return opt;
}

}  // namespace rpb::config_detail
