// rpb/train/config/config_optim.cpp: [optim] and its [[optim.group]] rules (train/config/config_detail.h).
#include <string>
#include <vector>

#include "train/config/config_detail.h"
#include "train/config/config_keys.h"

namespace rpb::config_detail {

using toml_config::Table;
using namespace run_limits;

namespace {

// [[optim.group]]: each a glob over parameter names with its weight decay and learning-rate scale, in order.
std::vector<optim::GroupRule> read_groups(const toml::table* ot, const Reader& r, double weight_decay,
                                         std::vector<std::string>* accepted) {
  std::vector<optim::GroupRule> groups;
  if (!ot || !ot->contains("group")) return groups;
  const toml::node* gn = ot->get("group");
  const toml::array* ga = gn->as_array();
  if (!ga || !ga->is_array_of_tables())
    throw Error(toml_config::node_location(*gn, r.source, r.applied) +
                ": optim.group: expected [[optim.group]] tables");
  for (const toml::node& e : *ga) {
    Table g(e.as_table(), "optim.group.", r.source, r.applied);
    optim::GroupRule rule;
    rule.weight_decay = weight_decay;
    g.get("pattern", rule.pattern);
    if (rule.pattern.empty()) g.fail_at("pattern", "expected a non-empty glob over parameter names");
    g.get("weight_decay", rule.weight_decay, 0.0, 1e3);
    g.get("lr_scale", rule.lr_scale, 0.0, 1e6);
    g.done();
    if (accepted)
      for (const std::string& k : g.seen()) accepted->push_back("optim.group." + k);
    groups.push_back(rule);
  }
  return groups;
}

}  // namespace

Table read_optim(const Reader& r, RunConfig& c, std::vector<std::string>* accepted) {
  OptimConfig& o = c.optim;
  const toml::table* ot = toml_config::subtable(r.root, "optim", r.source, r.applied);
  Table opt(ot, "optim.", r.source, r.applied);
  config_keys::read_keys(opt, "optim", c, r.fresh);
  const double wd = o.adam.weight_decay;
  o.sgd.weight_decay = wd;
  o.adam.decoupled = o.kind != OptimizerKind::adam;
  const int64_t horizon = o.total_steps;  // 0: run.steps (train --extend sets the steps the run was started with)
  o.schedule.total_steps = horizon > 0 ? horizon : c.steps;
  if (o.schedule.kind == optim::ScheduleKind::cosine && o.schedule.warmup_steps >= o.schedule.total_steps)
    opt.fail_at("warmup_steps", "expected fewer warm-up steps than " +
                                    (horizon > 0 ? "optim.total_steps = " : std::string("run.steps = ")) +
                                    std::to_string(o.schedule.total_steps) +
                                    (horizon > 0 ? opt.set_by("total_steps") : r.table("run").set_by("steps")));
  opt.ignore("group");
  if (r.fresh || (ot && ot->contains("group"))) o.adam.groups = o.sgd.groups = read_groups(ot, r, wd, accepted);
  opt.done();
  return opt;
}

}  // namespace rpb::config_detail
