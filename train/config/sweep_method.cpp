// rpb/train/config/sweep_method.cpp: a sweep's methods ("t5@max_distance=64", "swin_v2@window8"), parsed once into a
// scheme and typed settings when the config is read, and their labels; typed settings in and out of TOML and text.
#include <algorithm>
#include <cctype>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/text.h"
#include "nn/position.h"
#include "train/config/config_keys.h"
#include "train/config/document.h"

namespace rpb {

namespace {

void push_setting(toml::array& a, const SettingValue& v) {
  std::visit(
      [&](const auto& x) {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::vector<SettingValue>>) {
          toml::array sub;
          for (const SettingValue& e : x) push_setting(sub, e);
          a.push_back(std::move(sub));
        } else {
          a.push_back(x);
        }
      },
      v.value);
}

// "max_distance=64" of method `text` -> {position.max_distance, 64, "64"}: the value read as --set reads it.
ConfigSetting parse_setting(toml_config::Table& sweep, const std::string& text, const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    sweep.fail_at("methods", "\"" + printable(text) + "\": expected <scheme>@<key>=<value> (t5@max_distance=64, "
                             "sinusoidal@optim.lr=0.001) or swin_v2@window<N>; found \"@" + printable(s) + "\"");
  const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
  if (key == "position.scheme" || key == "scheme")
    sweep.fail_at("methods", "\"" + printable(text) + "\": the scheme is the part before the first '@'");
  const std::string dotted = (key.find('.') == std::string::npos ? "position." : "") + key;
  const std::string from = "sweep method \"" + printable(text) + "\"";
  const toml::table parsed = toml_config::parse_value(dotted, value, from);
  return {dotted, setting_value(*parsed.get("value"), from), value};
}

}  // namespace

const ConfigSetting* SweepMethod::parent() const {
  static const std::string key = config_keys::fine_tune_key(config_keys::FineTuneKey::parent);
  for (const ConfigSetting& s : settings)
    if (s.key == key) return &s;
  return nullptr;
}

ConfigSetting* SweepMethod::parent() { return const_cast<ConfigSetting*>(std::as_const(*this).parent()); }

ConfigSetting parent_pin(const std::string& sha256) {
  static const std::string key = config_keys::fine_tune_key(config_keys::FineTuneKey::pin);
  return {key, SettingValue{sha256}, sha256};
}

toml::table setting_table(const SettingValue& v) {
  toml::array a;
  push_setting(a, v);
  toml::table t;
  t.insert("value", *a.get(0));
  return t;
}

std::string setting_text(const SettingValue& v) {
  if (const auto* s = std::get_if<std::string>(&v.value)) {
    try {  // a bare word when --set reads it back as the same string
      const toml::table back = toml_config::parse_value("value", *s, "a setting");
      if (const toml::value<std::string>* read = back["value"].as_string(); read && read->get() == *s) return *s;
    } catch (const Error&) {
    }
  }
  const toml::table t = setting_table(v);
  return toml_config::value_text(*t.get("value"));
}

SettingValue setting_value(const toml::node& n, const std::string& from) {
  SettingValue v;
  if (n.is_boolean()) v.value = *n.value<bool>();
  else if (n.is_integer()) v.value = *n.value<int64_t>();
  else if (n.is_floating_point()) v.value = *n.value<double>();
  else if (n.is_string()) v.value = *n.value<std::string>();
  else if (const toml::array* a = n.as_array()) {
    std::vector<SettingValue> elements;
    for (const toml::node& e : *a) elements.push_back(setting_value(e, from));
    v.value = std::move(elements);
  } else {
    throw Error(from + ": expected a boolean, a number, a string or an array of them, found " +
                toml_config::type_name(n));
  }
  return v;
}

// "t5@max_distance=64@untrained=nearest" -> {t5, {position.max_distance = 64, position.untrained = "nearest"}};
// "swin_v2@window8" -> {swin_v2, {grid.eval_window = 8}}. The error names what was expected for the sweep's dims.
// The settings' keys and values are checked when the sweep's run configs are made (run_config).
SweepMethod parse_method(toml_config::Table& sweep, const std::string& text, int64_t dims) {
  SweepMethod m{text, "", {}};
  const std::vector<std::string> parts = m.segments();
  m.scheme = parts[0];
  const nn::SchemeInfo* info = nn::find_scheme(m.scheme, dims);
  if (!info) {
    std::string what = "\"";  // appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on "\"" + ...
    what += printable(text) + "\": expected one of";
    const std::vector<std::string> known = nn::scheme_names(dims);
    for (const std::string& n : known) what += " " + n;
    const std::string near = closest(m.scheme, known);
    sweep.fail_at("methods", what + (dims == 2 ? " (2-D task)" : " (1-D task)") +
                                 (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
  }
  // The method names a run folder: one path component.
  if (const std::string p = path_problem(text, run_limits::kMaxNameBytes, true); !p.empty())
    sweep.fail_at("methods", "\"" + printable(text) + "\": a method names a run folder (one path component: no '/', no "
                             "control, format or separator characters, at most " +
                                 std::to_string(run_limits::kMaxNameBytes) + " bytes), found " + p);
  const std::string window = "window";
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& s = parts[i];
    if (s.find('=') == std::string::npos && s.rfind(window, 0) == 0) {
      const std::string n = s.substr(window.size());
      const bool digits = !n.empty() && n.size() <= 4 && std::all_of(n.begin(), n.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch));
      });
      if (info->kind != nn::PositionKind::window || !digits || std::stoi(n) < 1)
        sweep.fail_at("methods", "\"" + printable(text) + "\": expected swin@window<N> or swin_v2@window<N> with N >= 1");
      const int64_t eval_window = std::stoi(n);
      m.settings.push_back({"grid.eval_window", {eval_window}, std::to_string(eval_window)});
      continue;
    }
    m.settings.push_back(parse_setting(sweep, text, s));
  }
  return m;
}

std::vector<std::string> SweepMethod::segments() const {
  std::vector<std::string> parts;
  for (std::size_t from = 0;;) {
    const auto at = text.find('@', from);
    parts.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return parts;
    from = at + 1;
  }
}

namespace {

// The setting `key` of `settings`, or null.
const ConfigSetting* setting(const std::vector<ConfigSetting>& settings, const std::string& key) {
  for (const ConfigSetting& s : settings)
    if (s.key == key) return &s;
  return nullptr;
}

// " + YaRN (s = 16, beta_fast 16)": the RoPE scaling `scaling` names with the parameters in force, set or defaulted:
// its factor s (position.rope_factor; 0 or unset: the largest evaluation multiplier, `largest_multiplier`, left out
// when 0 = unknown; "s = L / L0" with position.rope_factor_per_length) and the yarn_* keys set among `settings`. ""
// for "none".
std::string scaling_label(const ConfigSetting& scaling, const std::vector<ConfigSetting>& settings,
                          int64_t largest_multiplier) {
  const auto* name = std::get_if<std::string>(&scaling.value.value);
  const nn::RopeScaling kind = nn::rope_scaling_from_name(name ? *name : scaling.text);
  if (kind == nn::RopeScaling::none) return "";
  std::vector<std::string> params;
  const ConfigSetting* factor = setting(settings, "position.rope_factor");
  const auto* f = factor ? std::get_if<double>(&factor->value.value) : nullptr;
  const auto* i = factor ? std::get_if<int64_t>(&factor->value.value) : nullptr;
  const bool defaulted = !factor || (f && *f == 0) || (i && *i == 0);
  const ConfigSetting* per_length = setting(settings, "position.rope_factor_per_length");
  const auto* b = per_length ? std::get_if<bool>(&per_length->value.value) : nullptr;
  if (b && *b) params.push_back("s = L / L0");
  else if (!defaulted) params.push_back("s = " + factor->text);
  else if (largest_multiplier > 0) params.push_back("s = " + std::to_string(largest_multiplier));
  for (const ConfigSetting& s : settings)
    if (s.key.rfind("position.yarn_", 0) == 0) params.push_back(s.key.substr(14) + " " + s.text);
  std::string label = std::string(" + ") + nn::rope_scaling_label(kind);
  return params.empty() ? label : label + " (" + join(params, ", ") + ")";
}

}  // namespace

std::string SweepMethod::label(int64_t largest_multiplier) const {
  const nn::SchemeInfo* info = nullptr;
  for (const nn::SchemeInfo& s : nn::schemes())
    if (scheme == s.name) info = &s;
  std::string label = info ? info->label : scheme;
  const ConfigSetting* scaling = setting(settings, "position.rope_scaling");
  const std::string scaled = scaling ? scaling_label(*scaling, settings, largest_multiplier) : "";
  for (const ConfigSetting& s : settings) {  // {position.max_distance, 64} -> ", max_distance 64"
    const bool folded = s.key == "position.rope_factor" || s.key == "position.rope_factor_per_length" ||
                        s.key.rfind("position.yarn_", 0) == 0;
    if (s.key == "position.rope_scaling" && !scaled.empty()) label += scaled;
    else if (folded && !scaled.empty()) continue;  // shown in the scaling's parentheses
    else if (s.key == "position.blockwise" && s.text == "true") label += " + blockwise";
    else
      label += s.key == "run.eval_stride"       ? ", sliding window stride " + s.text
               : s.key == "run.init_from"       ? ", fine-tuned from " + s.text
               : s.key == "run.finetune_length" ? " at length " + s.text
               : ", " + (s.key == "grid.eval_window" ? std::string("eval window")
                         : s.key.rfind("position.", 0) == 0 ? s.key.substr(9) : s.key) +
                     " " + s.text;
  }
  return label;
}

}  // namespace rpb
