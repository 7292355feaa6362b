#include "cli/schemes.h"

#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/text.h"
#include "nn/position.h"
#include "nn/position/options.h"
#include "train/data/task_registry.h"

namespace rpb {

namespace {

using nlohmann::ordered_json;

std::vector<int64_t> dims_of(const nn::SchemeInfo& s) {
  return s.dims == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{s.dims};
}

ordered_json null_or(const char* text) { return text ? ordered_json(text) : ordered_json(nullptr); }

ordered_json scheme_json(const nn::SchemeInfo& s) {
  ordered_json options = ordered_json::array();
  for (const nn::PositionOptionInfo* o : nn::options_of(s)) options.push_back(o->key);
  return {{"name", s.name},
          {"dims", dims_of(s)},
          {"kind", nn::kind_name(s.kind)},
          {"label", s.label},
          {"description", s.description},
          {"per_layer", s.per_layer},
          {"row_table", s.row_table},
          {"embedding", nn::recipe_name(s.embedding)},
          {"window_bias", null_or(s.kind == nn::PositionKind::window ? nn::window_bias_name(s.window_bias) : nullptr)},
          {"length_option", null_or(s.length_option)},
          {"bidirectional", null_or(s.bidirectional)},
          {"causal_only", null_or(s.causal_only)},
          {"options", options}};
}

// The option's type, default (a default PositionOptions: the config's defaults) and accepted values.
void add_values(const nn::PositionOptionInfo& o, ordered_json& j) {
  const nn::PositionOptions defaults;
  std::visit(
      [&](auto member) {
        const auto& v = defaults.*member;
        using T = std::remove_cv_t<std::remove_reference_t<decltype(v)>>;
        if constexpr (std::is_same_v<T, int64_t>) {
          j["default"] = v;
          j["min"] = o.range.lo;
          j["max"] = o.range.hi;
          j["min_open"] = j["max_open"] = false;
        } else if constexpr (std::is_same_v<T, double>) {
          j["default"] = v;
          j["min"] = o.real.lo;
          j["max"] = o.real.hi;
          j["min_open"] = o.real.lo_open;
          j["max_open"] = o.real.hi_open;
        } else if constexpr (std::is_same_v<T, bool>) {
          j["default"] = v;
        } else if constexpr (std::is_same_v<T, nn::Untrained>) {
          j["default"] = nn::untrained_name(v);
          j["choices"] = nn::choice_names(o);
        } else {
          static_assert(std::is_same_v<T, nn::RopeScaling>, "a position option type without its JSON");
          j["default"] = nn::rope_scaling_name(v);
          j["choices"] = nn::choice_names(o);
        }
      },
      o.member);
}

ordered_json option_json(const nn::PositionOptionInfo& o) {
  ordered_json j = {{"key", o.key}, {"table", o.table}, {"type", nn::option_type(o)}};
  add_values(o, j);
  j["doc"] = o.doc;
  j["loaded"] = o.loaded;
  j["added"] = o.added;  // written into a stored config only when set away from its default
  j["role"] = nn::option_role_name(o.role);
  j["bias_flag"] = o.bias_flag ? ordered_json(nn::option_flag_name(o)) : ordered_json(nullptr);
  j["eval_flag"] = o.eval_name ? ordered_json(nn::option_flag_name(o)) : ordered_json(nullptr);
  j["schemes"] = nn::schemes_reading(o);
  return j;
}

std::string padded(std::string s, std::size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s + "  ";
}

// "an integer in [2, 65536]", "a number in (1, 1e+12]", "true or false", "\"keep\" or \"nearest\"".
std::string in_words(const nn::PositionOptionInfo& o) {
  const std::string type = nn::option_type(o);
  const std::string prefix = type == "integer" ? "an integer in " : type == "real" ? "a number in " : "";
  return prefix + nn::accepted_values(o);
}

void print_text(std::ostream& out) {
  out << "Position schemes (position.scheme; 1-D for the token tasks, 2-D for grid2d):\n";
  out << "  " << padded("name", 12) << padded("dims", 4) << padded("kind", 13) << padded("label", 28) << "options\n";
  for (const nn::SchemeInfo& s : nn::schemes()) {
    std::vector<std::string> options;
    for (const nn::PositionOptionInfo* o : nn::options_of(s)) options.emplace_back(o->key);
    out << "  " << padded(s.name, 12) << padded(s.dims == 0 ? "1, 2" : std::to_string(s.dims), 4)
        << padded(nn::kind_name(s.kind), 13) << padded(s.label, 28) << (options.empty() ? "-" : join(options, ", "))
        << "\n      " << s.description << "\n";
    if (s.bidirectional) out << "      bidirectional (model.causal = false): " << s.bidirectional << "\n";
    if (s.causal_only) out << "      causal only: " << s.causal_only << "\n";
  }
  out << "\nOptions (key = default, accepted values, the schemes that read it: what it sets):\n";
  const nn::PositionOptions defaults;
  for (const nn::PositionOptionInfo& o : nn::position_option_table()) {
    out << "  " << o.table << "." << o.key << " = " << nn::option_value_text(o, defaults) << ", "
        << in_words(o) << ", " << join(nn::schemes_reading(o), ", ") << ": " << o.doc
        << (o.loaded ? "" : " (read only to initialise)")
        << (o.eval_name ? " (rpb eval " + nn::option_flag_name(o) + ")" : "") << "\n";
  }
}

}  // namespace

ordered_json schemes_json() {
  ordered_json schemes = ordered_json::array(), options = ordered_json::array();
  for (const nn::SchemeInfo& s : nn::schemes()) schemes.push_back(scheme_json(s));
  for (const nn::PositionOptionInfo& o : nn::position_option_table()) options.push_back(option_json(o));
  // The tasks, for what a scheme reads of them: an algorithmic task's training length L0 counts its sample's tokens
  // (data::sequence_tokens), not run.length.
  ordered_json tasks = ordered_json::array();
  for (const data::TaskInfo& t : data::tasks())
    tasks.push_back({{"name", t.name}, {"dims", t.dims}, {"algorithmic", t.algorithmic != nullptr}});
  return {{"schemes", schemes}, {"options", options}, {"tasks", tasks}};
}

int run_schemes_command(bool json, std::ostream& out) {
  if (json) out << schemes_json().dump() << "\n";
  else print_text(out);
  return 0;
}

CommandRunner add_schemes_command(CLI::App& cmd) {
  auto json = std::make_shared<bool>(false);
  cmd.add_flag("--json", *json, "print one JSON object (the format cli/schemes.h describes)");
  return [json] { return run_schemes_command(*json); };
}

}  // namespace rpb
