#include "nn/module.h"

#include <algorithm>

namespace rpb::nn {

void Module::check_name(const std::string& name) const {
  RPB_CHECK(!name.empty(), "module", "empty parameter, buffer or module name");
  RPB_CHECK(name.find('.') == std::string::npos, "module", "name '", name, "' contains a dot (dots join module paths)");
  const auto taken = [&](const std::string& n) { return n == name; };
  bool dup = std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return taken(p.first); }) ||
             std::any_of(buffers_.begin(), buffers_.end(), [&](const auto& b) { return taken(b.name); }) ||
             std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return taken(c.first); });
  RPB_CHECK(!dup, "module", "name '", name, "' is already registered");
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_name(name);
  RPB_CHECK(value.defined() && value.is_floating(), "module", "parameter '", name, "' must be a float tensor");
  value.requires_grad_();
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  check_name(name);
  RPB_CHECK(value.defined(), "module", "buffer '", name, "' is undefined");
  buffers_.push_back({name, value, persistent});
  return value;
}

void Module::collect(const std::string& prefix, NamedTensors& params, NamedTensors* buffers,
                     bool persistent_only) const {
  for (const auto& [name, t] : params_) params.emplace_back(prefix + name, t);
  if (buffers)
    for (const Buffer& b : buffers_)
      if (b.persistent || !persistent_only) buffers->emplace_back(prefix + b.name, b.value);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, buffers, persistent_only);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out, nullptr, false);
  return out;
}

NamedTensors Module::named_buffers(bool persistent_only) const {
  NamedTensors params, out;
  collect("", params, &out, persistent_only);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& [name, child] : children_) out.emplace_back(name, child.get());
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  for (const auto& [name, child] : children_) {
    out.emplace_back(name, child.get());
    for (auto& [path, m] : child->named_modules()) out.emplace_back(name + "." + path, m);
  }
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::to(DType dtype) {
  auto convert = [dtype](const Tensor& t) {
    if (t.is_floating()) t.to_(dtype);  // index buffers stay int64
  };
  for (const auto& [name, t] : params_) convert(t);
  for (const Buffer& b : buffers_) convert(b.value);
  for (const auto& [name, child] : children_) child->to(dtype);
}

void Module::to(Device device) {
  for (const auto& [name, t] : params_) t.to_(device);
  for (const Buffer& b : buffers_) b.value.to_(device);
  for (const auto& [name, child] : children_) child->to(device);
}

Device Module::device() const {
  const NamedTensors params = named_parameters();
  return params.empty() ? Device::cpu : params.front().second.device();
}

void Module::zero_grad() {
  for (const auto& [name, t] : named_parameters()) t.zero_grad();
}

void Module::project_parameters() {
  project();
  for (const auto& [name, child] : named_children()) child->project_parameters();
}

}  // namespace rpb::nn
