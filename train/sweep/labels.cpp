// rpb/train/sweep/labels.cpp: see labels.h.
#include "train/sweep/labels.h"

#include <algorithm>

#include "nn/position.h"
#include "nn/position/options.h"
#include "train/sweep/results_tex.h"

namespace rpb {

namespace {

bool sets(const SweepMethod& m, const std::string& key) {
  return std::any_of(m.settings.begin(), m.settings.end(), [&](const ConfigSetting& s) { return s.key == key; });
}

// `m` with the evaluation settings its run config `run` holds away from their defaults and `m` does not set
// (the sweep's config sets them for every row), for the scheme's options only: first, as the scheme's own.
SweepMethod with_settings_in_force(const SweepMethod& m, const RunConfig& run) {
  SweepMethod shown{m.text, m.scheme, {}};
  const nn::PositionOptions& p = run.model.position;
  const nn::SchemeInfo* info = nn::find_scheme(m.scheme, p.dims);
  if (!info) return m;
  const auto add = [&](const char* key, const std::string& text, SettingValue value) {
    const nn::PositionOptionInfo* o = nn::find_position_option(key);
    if (o && o->read_by(*info) && !sets(m, std::string("position.") + key))
      shown.settings.push_back({std::string("position.") + key, std::move(value), text});
  };
  if (p.rope_scaling != nn::RopeScaling::none && !sets(m, "position.rope_scaling")) {
    add("rope_scaling", nn::rope_scaling_name(p.rope_scaling), {std::string(nn::rope_scaling_name(p.rope_scaling))});
    if (p.rope_factor != 0) add("rope_factor", setting_text({p.rope_factor}), {p.rope_factor});
    if (p.rope_factor_per_length) add("rope_factor_per_length", "true", {true});
  }
  if (p.blockwise) add("blockwise", "true", {true});
  if (p.untrained != nn::Untrained::keep)
    add("untrained", nn::untrained_name(p.untrained), {std::string(nn::untrained_name(p.untrained))});
  shown.settings.insert(shown.settings.end(), m.settings.begin(), m.settings.end());
  return shown;
}

}  // namespace

std::string method_label(const RunConfig& base, const SweepMethod& m, const RunConfig& run) {
  if (const auto it = base.sweep.labels.find(m.name()); it != base.sweep.labels.end()) return it->second;
  const auto& multipliers = run.eval_multipliers;
  const int64_t largest = multipliers.empty() ? 0 : *std::max_element(multipliers.begin(), multipliers.end());
  return with_settings_in_force(m, run).label(largest);
}

std::string task_label(const std::map<std::string, std::string>& task_labels, const std::string& task) {
  if (const auto it = task_labels.find(task); it != task_labels.end()) return it->second;
  std::string out = task;
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

std::string escape_label(const std::string& label, LabelFormat format) {
  if (format == LabelFormat::latex) return latex_escape(label);
  if (format == LabelFormat::text) return label;
  std::string out;
  for (const char c : label) {
    if (c == '|' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace rpb
