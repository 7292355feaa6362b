// rpb/nn/position/options.cpp: the table of position options (nn/position/options.h).
#include "nn/position/options.h"

#include <algorithm>
#include <type_traits>

#include "nn/position/common.h"

namespace rpb::nn {

namespace {

// The rope scaling keys, set on a scheme without rotary frequencies.
constexpr const char* kNoFrequencies = "has no rotary frequencies to scale";

// The table. Which schemes read an option is the schemes' to say (SchemeInfo::reads), or a row property's
// (reads_if). Its order is the order the config reads the keys: [position]'s, then [grid]'s max_side (read with
// [grid], before [position]).
const std::vector<PositionOptionInfo>& option_rows() {
  namespace L = limits;
  using P = PositionOptions;
  static const std::vector<PositionOptionInfo> table = {
      {.key = "num_buckets", .member = &P::num_buckets, .doc = "number of buckets", .range = L::num_buckets,
       .bias_flag = true},
      {.key = "max_distance", .member = &P::max_distance, .doc = "distance where the log buckets end",
       .range = L::max_distance, .bias_flag = true},
      {.key = "max_relative_position", .member = &P::max_relative_position, .doc = "clipping distance K",
       .range = L::max_relative_position, .bias_flag = true},
      {.key = "lambda", .member = &P::lambda, .doc = "the decay strength (the initial one when learnable)",
       .real = L::lambda, .bias_flag = true},
      {.key = "learnable_lambda", .member = &P::learnable_lambda, .doc = "learn lambda per head (KERPLE-log)"},
      {.key = "max_positions", .member = &P::max_positions, .doc = "the table's length: the longest sequence",
       .range = L::max_positions},
      {.key = "rope_base", .member = &P::rope_base, .doc = "the base of the rotation frequencies",
       .real = L::rope_base},
      {.key = "xpos_scale_base", .member = &P::xpos_scale_base,
       .doc = "B of xPos's decay zeta^(n/B): the positions over which it acts", .range = L::xpos_scale_base,
       .added = true},
      {.key = "blockwise", .member = &P::blockwise,
       .doc = "evaluation: blockwise causal attention, each query over its block of the train length and the one before",
       .added = true, .refused_elsewhere = "has no blockwise evaluation", .role = OptionRole::evaluation},
      {.key = "fire_length", .member = &P::fire_length,
       .doc = "L0: FIRE's threshold starts at L = L0 (a learned multiplier scales it); 0: run.length",
       .range = L::fire_length, .bias_flag = true, .added = true},
      {.key = "fire_hidden", .member = &P::fire_hidden, .doc = "the width of FIRE's MLP", .range = L::fire_hidden,
       .added = true},
      {.key = "max_side", .member = &P::max_side, .doc = "the table's side: the largest grid side",
       .range = L::max_side, .table = "grid"},
      {.key = "init_std", .member = &P::init_std, .doc = "std of the learned table's initial values",
       .real = L::init_std, .loaded = false},
      {.key = "untrained", .member = &P::untrained, .doc = "what evaluation reads at a row training never read",
       .reads_if = [](const SchemeInfo& s) { return s.row_table; }, .role = OptionRole::evaluation},
      {.key = "rope_scaling", .member = &P::rope_scaling,
       .doc = "the rotary frequencies past the training length: none, linear, ntk, dynamic or yarn", .added = true,
       .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune},
      {.key = "rope_factor", .member = &P::rope_factor,
       .doc = "rope scaling's factor; 0: the largest evaluation multiplier", .real = L::rope_factor, .added = true,
       .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune},
      {.key = "yarn_beta_fast", .member = &P::yarn_beta_fast, .doc = "yarn: the rotations where the ramp starts",
       .real = L::yarn_beta, .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune},
      {.key = "yarn_beta_slow", .member = &P::yarn_beta_slow, .doc = "yarn: the rotations where the ramp ends",
       .real = L::yarn_beta, .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune},
      {.key = "yarn_attention_factor", .member = &P::yarn_attention_factor,
       .doc = "yarn: what cos and sin are multiplied by; 0: 0.1 ln(factor) + 1", .real = L::yarn_attention_factor,
       .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune},
  };
  return table;
}

template <class>
inline constexpr bool always_false = false;

}  // namespace

const std::vector<PositionOptionInfo>& position_option_table() { return option_rows(); }


bool PositionOptionInfo::read_by(const SchemeInfo& s) const {
  if (reads_if && reads_if(s)) return true;
  return std::find(s.reads.begin(), s.reads.end(), key) != s.reads.end();
}

const PositionOptionInfo* find_position_option(const std::string& key) {
  for (const PositionOptionInfo& o : option_rows())
    if (key == o.key) return &o;
  return nullptr;
}

std::vector<const PositionOptionInfo*> options_of(const SchemeInfo& s) {
  std::vector<const PositionOptionInfo*> out;
  for (const PositionOptionInfo& o : option_rows())
    if (o.read_by(s)) out.push_back(&o);
  return out;
}

std::vector<std::string> schemes_reading(const PositionOptionInfo& o, int64_t dims) {
  std::vector<std::string> names;
  for (const SchemeInfo& s : schemes())
    if (o.read_by(s) && (dims == 0 || s.fits(dims))) names.emplace_back(s.name);
  return names;
}

const char* option_type(const PositionOptionInfo& o) {
  static const char* const names[] = {"integer", "real", "boolean", "choice", "choice"};
  return names[o.member.index()];
}

std::string bias_flag_name(const PositionOptionInfo& o) {
  std::string flag = std::string("--") + o.key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string accepted_values(const PositionOptionInfo& o) {
  using position_detail::shortest;
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(PositionOptions{}.*member)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          std::string text = "[";
          text += std::to_string(o.range.lo);
          text += ", ";
          text += std::to_string(o.range.hi);
          return text + "]";
        } else if constexpr (std::is_same_v<T, double>) {
          std::string text = o.real.lo_open ? "(" : "[";
          text += shortest(o.real.lo);
          text += ", ";
          text += shortest(o.real.hi);
          return text + (o.real.hi_open ? ")" : "]");
        } else if constexpr (std::is_same_v<T, bool>) {
          return "true or false";
        } else if constexpr (std::is_same_v<T, Untrained> || std::is_same_v<T, RopeScaling>) {
          std::string names;
          for (const std::string& n : choice_names(o)) {
            names += names.empty() ? "\"" : " or \"";
            names += n;
            names += '"';
          }
          return names;
        } else {
          static_assert(always_false<T>, "an option type without its accepted values");
        }
      },
      o.member);
}

std::string option_value_text(const PositionOptionInfo& o, const PositionOptions& p) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = p.*member;
        using T = std::remove_cv_t<std::remove_reference_t<decltype(v)>>;
        if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return position_detail::shortest(v);
        else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, Untrained>) return '"' + std::string(untrained_name(v)) + '"';
        else return '"' + std::string(rope_scaling_name(v)) + '"';
      },
      o.member);
}

std::vector<std::string> choice_names(const PositionOptionInfo& o) {
  if (std::holds_alternative<Untrained PositionOptions::*>(o.member)) return untrained_names();
  if (std::holds_alternative<RopeScaling PositionOptions::*>(o.member)) return rope_scaling_names();
  return {};
}

}  // namespace rpb::nn
