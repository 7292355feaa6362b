// rpb/nn/position/options.cpp: the table of position options (nn/position/options.h).
#include "nn/position/options.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <type_traits>

#include "core/enum_names.h"
#include "core/error.h"

#include "nn/position/common.h"

namespace rpb::nn {

namespace {

// The rope scaling keys, set on a scheme without rotary frequencies.
constexpr const char* kNoFrequencies = "has no rotary frequencies to scale";
// Randomized positions, set on a scheme that reads none (none, the 2-D schemes).
constexpr const char* kNoPositions = "reads no positions of a line to randomize";
bool randomizable(const SchemeInfo& s) { return s.dims == 1; }

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
       .doc = "blockwise causal attention in evaluation, each query over its block of the train length and the one "
              "before",
       .added = true, .refused_elsewhere = "has no blockwise evaluation", .role = OptionRole::evaluation,
       .eval_name = "blockwise"},
      {.key = "fire_length", .member = &P::fire_length,
       .doc = "L0: FIRE's threshold starts at L = L0 (a learned multiplier scales it); 0: run.length",
       .range = L::fire_length, .bias_flag = true, .added = true},
      {.key = "fire_hidden", .member = &P::fire_hidden, .doc = "the width of FIRE's MLP", .range = L::fire_hidden,
       .added = true},
      {.key = "randomized", .member = &P::randomized,
       .doc = "train at random positions: each training forward reads a sorted random subset of [0, "
              "randomized_max) (Ruoss et al. 2023)",
       .reads_if = randomizable, .added = true, .refused_elsewhere = kNoPositions},
      {.key = "randomized_max", .member = &P::randomized_max,
       .doc = "L_max of randomized positions: the positions each subset is drawn from", .reads_if = randomizable,
       .range = L::randomized_max, .added = true, .refused_elsewhere = kNoPositions},
      {.key = "contiguous_eval", .member = &P::contiguous_eval,
       .doc = "with randomized positions, evaluation reads the positions 0 .. L - 1 instead of drawing them as "
              "training does (Ruoss et al. draw at test time too)",
       .reads_if = randomizable, .added = true, .refused_elsewhere = kNoPositions, .role = OptionRole::evaluation,
       .eval_name = "contiguous"},
      {.key = "max_side", .member = &P::max_side, .doc = "the table's side: the largest grid side",
       .range = L::max_side, .table = "grid"},
      {.key = "init_std", .member = &P::init_std, .doc = "std of the learned table's initial values",
       .real = L::init_std, .loaded = false},
      {.key = "untrained", .member = &P::untrained,
       .doc = "what evaluation reads at a table row training never read: keep (the row) or nearest (its nearest "
              "trained row)",
       .reads_if = [](const SchemeInfo& s) { return s.row_table; }, .role = OptionRole::evaluation, .eval_name = ""},
      {.key = "rope_scaling", .member = &P::rope_scaling,
       .doc = "the rotary frequencies past the training length: none, linear (position interpolation), ntk (static "
              "NTK-aware), dynamic (dynamic NTK) or yarn, as Hugging Face computes them",
       .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune, .eval_name = "rope_"},
      {.key = "rope_factor", .member = &P::rope_factor,
       .doc = "rope scaling's factor (at least 1); 0: the largest evaluation multiplier", .real = L::rope_factor,
       .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::fine_tune, .eval_name = "factor"},
      {.key = "rope_factor_per_length", .member = &P::rope_factor_per_length,
       .doc = "rope scaling's factor set per evaluation length: s = L / L0 at length L (1x unscaled), as the papers' "
              "rows without fine-tune compute it, instead of one factor for every length",
       .added = true, .refused_elsewhere = kNoFrequencies, .role = OptionRole::evaluation, .eval_name = "per_length"},
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

std::vector<const PositionOptionInfo*> eval_options() {
  std::vector<const PositionOptionInfo*> out;
  for (const PositionOptionInfo& o : option_rows())
    if (o.eval_name) out.push_back(&o);
  return out;
}

std::string option_flag_name(const PositionOptionInfo& o) {
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
  const PositionValue v = option_value(o, p);
  const std::string text = value_text(v);
  const bool choice = std::holds_alternative<Untrained>(v) || std::holds_alternative<RopeScaling>(v);
  return choice ? '"' + text + '"' : text;
}

PositionValue option_value(const PositionOptionInfo& o, const PositionOptions& p) {
  return std::visit([&](auto member) -> PositionValue { return p.*member; }, o.member);
}

std::string value_text(const PositionValue& v) {
  return std::visit(
      [](auto x) -> std::string {
        using T = decltype(x);
        if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return position_detail::shortest(x);
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, Untrained>) return untrained_name(x);
        else return rope_scaling_name(x);
      },
      v);
}

namespace {

// `text` as a whole number of type T (from_chars: no sign but '-', no spaces, no locale), or nullopt.
template <class T>
std::optional<T> parse_number(const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

}  // namespace

std::optional<PositionValue> parse_option_value(const PositionOptionInfo& o, const std::string& text) {
  std::optional<PositionValue> v;
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(PositionOptions{}.*member)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          if (const std::optional<T> n = parse_number<T>(text)) v = *n;
        } else if constexpr (std::is_same_v<T, bool>) {
          if (text == "true" || text == "false") v = text == "true";
        } else if constexpr (std::is_same_v<T, Untrained>) {
          if (const std::optional<Untrained> u = enum_value(kUntrainedNames, text)) v = *u;
        } else {
          if (const std::optional<RopeScaling> r = enum_value(kRopeScalingNames, text)) v = *r;
        }
      },
      o.member);
  if (v && !accepts(o, *v)) v.reset();
  return v;
}

bool accepts(const PositionOptionInfo& o, const PositionValue& v) {
  if (v.index() != o.member.index()) return false;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return o.range.contains(*i);
  if (const double* d = std::get_if<double>(&v)) return o.real.contains(*d);
  return true;
}

void PositionSetting::apply(PositionOptions& p) const {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(p.*member)>;
        const T* v = std::get_if<T>(&value);
        RPB_CHECK(v != nullptr, "position options", option->key, ": a value of another type than its ",
                  option_type(*option), " (", value_text(value), ")");
        p.*member = *v;
      },
      option->member);
}

PositionSetting position_setting(const std::string& key, const PositionValue& value) {
  const PositionOptionInfo* o = find_position_option(key);
  RPB_CHECK(o != nullptr, "position options", "no option ", key);
  RPB_CHECK(accepts(*o, value), "position options", key, ": ", value_text(value), " is not ", option_type(*o), " ",
            accepted_values(*o));
  return {o, value};
}

std::string PositionSetting::flag_text() const {
  const std::string flag = option_flag_name(*option);
  return std::holds_alternative<bool>(value) ? flag : flag + " " + value_text(value);
}

std::vector<std::string> choice_names(const PositionOptionInfo& o) {
  if (std::holds_alternative<Untrained PositionOptions::*>(o.member)) return untrained_names();
  if (std::holds_alternative<RopeScaling PositionOptions::*>(o.member)) return rope_scaling_names();
  return {};
}

}  // namespace rpb::nn
