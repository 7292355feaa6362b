// rpb/optim/optimizer.h: the optimizer interface, parameter groups by name pattern,
// and the optimizer state saved in checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace rpb::optim {

/// Assigns every parameter whose full module path matches `pattern` a weight decay
/// and a learning-rate scale. Patterns are globs: '*' matches any run of characters
/// (dots included), '?' exactly one. An optimizer tries its rules in order and the
/// FIRST match wins; parameters that match no rule get the optimizer's default
/// weight decay and lr_scale 1. Example rules:
/// {"*.bias", 0.0}, {"*ln*", 0.0}, {"pos.*", 0.0, 0.1}, {"*.pos.*", 0.0, 0.1}.
struct GroupRule {
  std::string pattern;
  double weight_decay;
  double lr_scale = 1.0;
};

/// True when the glob `pattern` matches all of `name` ('*': any run, dots included; '?': one character).
///
/// @code
/// CHECK(rpb::optim::glob_match("*.bias", "blocks.0.attn.qkv.bias"));
/// CHECK(!rpb::optim::glob_match("*.bias", "blocks.0.attn.qkv.bias_table"));
/// CHECK(rpb::optim::glob_match("blocks.?.ln*", "blocks.3.ln1.weight"));
/// @endcode
bool glob_match(const std::string& pattern, const std::string& name);

/// A parameter as an optimizer holds it: its module path, the tensor (updated in
/// place) and the group settings resolved from the rules at construction.
struct NamedParam {
  std::string name;
  Tensor param;
  double weight_decay = 0.0;
  double lr_scale = 1.0;
};

/// Everything needed to resume an optimizer bit-exactly (saved in checkpoints).
struct OptimizerState {
  /// "adam" or "sgd"; load_state refuses another optimizer's state.
  std::string kind;
  /// Optimizer steps taken (steps_taken()).
  int64_t step = 0;
  /// Per-parameter state named "<slot>/<parameter name>": "exp_avg/...", "exp_avg_sq/...",
  /// "step/..." (Adam; a 0-d int64 count), "momentum/..." (SGD). Parameters that never
  /// had a gradient have no entries.
  nn::NamedTensors tensors;
  /// Hyper-parameters, for the record: lr (the last one used), beta1, beta2, eps,
  /// weight_decay (the default), momentum, ... load_state does not read them.
  std::vector<std::pair<std::string, double>> scalars;
  /// describe_groups() of the saving optimizer, for the record.
  std::string groups;
};

/// An optimizer over named parameters. Subclasses implement step() and the state;
/// the base resolves groups, validates parameters and checks loaded state.
///
/// @code
/// rpb::Tensor w = rpb::Tensor::ones({2, 2}).requires_grad_();
/// rpb::Tensor b = rpb::Tensor::zeros({2}).requires_grad_();
/// rpb::optim::SGD opt({{"fc.weight", w}, {"fc.bias", b}},
///                     {.weight_decay = 0.01, .groups = {{"*.bias", 0.0}}});
/// CHECK(opt.params()[0].weight_decay == 0.01);  // no rule matches: the default
/// CHECK(opt.params()[1].weight_decay == 0.0);   // "*.bias"
/// CHECK(opt.describe_groups().find("fc.bias") != std::string::npos);
/// @endcode
class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update from the parameters' gradients with learning rate `lr` (>= 0; each
  /// parameter uses lr * its lr_scale). Parameters without a gradient are skipped.
  virtual void step(double lr) = 0;
  /// Drops every parameter's gradient.
  void zero_grad();
  /// The parameters in construction order, with their resolved groups.
  const std::vector<NamedParam>& params() const { return params_; }
  /// Number of completed step() calls (restored by load_state).
  int64_t steps_taken() const { return steps_; }

  /// A deep copy of the state (later steps do not change it).
  virtual OptimizerState state() const = 0;
  /// Restores a state saved by the same kind of optimizer over parameters with the same
  /// names, shapes and dtypes. Checks everything before changing anything; parameters
  /// absent from the state start fresh. Restores bit-exactly.
  virtual void load_state(const OptimizerState& state) = 0;

  /// One line per rule (and one for the default group): the settings and the
  /// parameters that fell into it ("no parameters" flags a rule that matched nothing).
  std::string describe_groups() const;

 protected:
  /// `kind` names the optimizer in errors and states. Checks that every parameter is
  /// defined, a float leaf requiring grad, uniquely named and not sharing storage with another.
  Optimizer(std::string kind, const nn::NamedTensors& params, std::vector<GroupRule> rules,
            double default_weight_decay);

  /// Throws unless lr is finite and >= 0.
  void check_lr(double lr) const;
  /// Call at the end of a successful step.
  void finish_step(double lr);

  /// How a per-parameter state slot must look: like the parameter (shape and dtype),
  /// or a 0-d int64 count.
  struct SlotSpec {
    std::string prefix;
    bool count = false;
  };
  /// A validated state tensor: which slot (index into the specs) and which parameter.
  struct SlotEntry {
    std::size_t slot;
    std::size_t param;
    Tensor value;
  };
  /// Validates `s` (kind, step, every tensor "<prefix>/<param>" with a known prefix, an
  /// existing parameter, the expected shape and dtype, no duplicates, and each parameter
  /// having either all slots or none); returns the entries, each slot on its parameter's
  /// device (counts on the host). Changes nothing.
  std::vector<SlotEntry> check_state(const OptimizerState& s, const std::vector<SlotSpec>& specs) const;
  /// The common part of state(): kind, step, groups, the "lr" scalar.
  OptimizerState base_state() const;
  /// The common part of load_state() after check_state: the step count and last lr.
  void load_base_state(const OptimizerState& s);

  const std::string& kind() const { return kind_; }

  std::vector<NamedParam> params_;

 private:
  std::string kind_;
  std::vector<GroupRule> rules_;
  std::vector<int> rule_of_;  // index into rules_ per parameter, -1 for the default group
  double default_weight_decay_;
  int64_t steps_ = 0;
  double last_lr_ = 0.0;
};

}  // namespace rpb::optim
