#include "optim/optimizer.h"

#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

namespace rpb::optim {

bool glob_match(const std::string& pattern, const std::string& name) {
  // Greedy matching with backtracking to the last '*': O(|pattern| * |name|) worst case.
  std::size_t p = 0, n = 0;
  std::size_t star = std::string::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Optimizer::~Optimizer() = default;

Optimizer::Optimizer(std::string kind, const nn::NamedTensors& params, std::vector<GroupRule> rules,
                     double default_weight_decay)
    : kind_(std::move(kind)), rules_(std::move(rules)), default_weight_decay_(default_weight_decay) {
  const char* op = kind_.c_str();
  RPB_CHECK(std::isfinite(default_weight_decay) && default_weight_decay >= 0, op,
            "weight_decay must be finite and >= 0, got ", default_weight_decay);
  RPB_CHECK(!params.empty(), op, "got an empty parameter list");
  for (std::size_t r = 0; r < rules_.size(); ++r) {
    const GroupRule& g = rules_[r];
    RPB_CHECK(!g.pattern.empty(), op, "group rule ", r, " has an empty pattern");
    RPB_CHECK(std::isfinite(g.weight_decay) && g.weight_decay >= 0, op, "group rule ", r, " '", g.pattern,
              "': weight_decay must be finite and >= 0, got ", g.weight_decay);
    RPB_CHECK(std::isfinite(g.lr_scale) && g.lr_scale >= 0, op, "group rule ", r, " '", g.pattern,
              "': lr_scale must be finite and >= 0, got ", g.lr_scale);
  }
  std::unordered_map<std::string, std::size_t> by_name;
  std::unordered_map<const void*, std::string> by_storage;
  params_.reserve(params.size());
  rule_of_.reserve(params.size());
  for (const auto& [name, t] : params) {
    RPB_CHECK(!name.empty(), op, "parameter ", params_.size(), " has an empty name");
    RPB_CHECK(t.defined(), op, "parameter '", name, "' is an undefined tensor");
    RPB_CHECK(t.is_floating(), op, "parameter '", name, "' has dtype ", dtype_name(t.dtype()),
              ", expected float32 or float64");
    RPB_CHECK(t.requires_grad() && t.is_leaf(), op, "parameter '", name, "' is not a leaf that requires grad");
    RPB_CHECK(by_name.emplace(name, params_.size()).second, op, "duplicate parameter name '", name, "'");
    const auto [it, fresh] = by_storage.emplace(t.storage_id(), name);
    RPB_CHECK(fresh, op, "parameter '", name, "' shares its storage with parameter '", it->second, "'");
    int rule = -1;
    for (std::size_t r = 0; r < rules_.size() && rule < 0; ++r)
      if (glob_match(rules_[r].pattern, name)) rule = static_cast<int>(r);
    const double wd = rule < 0 ? default_weight_decay_ : rules_[rule].weight_decay;
    const double scale = rule < 0 ? 1.0 : rules_[rule].lr_scale;
    params_.push_back({name, t, wd, scale});
    rule_of_.push_back(rule);
  }
}

void Optimizer::zero_grad() {
  for (const NamedParam& p : params_) p.param.zero_grad();
}

std::string Optimizer::describe_groups() const {
  std::ostringstream os;
  auto line = [&](int rule) {
    std::vector<std::string> names;
    int64_t values = 0;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (rule_of_[i] == rule) {
        names.push_back(params_[i].name);
        values += params_[i].param.numel();
      }
    if (rule < 0 && names.empty() && !rules_.empty()) return;  // every parameter matched a rule
    if (rule < 0)
      os << "default: weight_decay " << default_weight_decay_ << ", lr_scale 1";
    else
      os << "rule " << rule << " '" << rules_[rule].pattern << "': weight_decay " << rules_[rule].weight_decay
         << ", lr_scale " << rules_[rule].lr_scale;
    if (names.empty()) {
      os << ": no parameters\n";
      return;
    }
    os << ": " << names.size() << (names.size() == 1 ? " tensor, " : " tensors, ") << values << " values: ";
    for (std::size_t k = 0; k < names.size(); ++k) os << (k ? ", " : "") << names[k];
    os << "\n";
  };
  for (std::size_t r = 0; r < rules_.size(); ++r) line(static_cast<int>(r));
  line(-1);
  return os.str();
}

void Optimizer::check_lr(double lr) const {
  RPB_CHECK(std::isfinite(lr) && lr >= 0, kind_.c_str(), "learning rate must be finite and >= 0, got ", lr);
}

void Optimizer::finish_step(double lr) {
  ++steps_;
  last_lr_ = lr;
}

std::vector<Optimizer::SlotEntry> Optimizer::check_state(const OptimizerState& s,
                                                         const std::vector<SlotSpec>& specs) const {
  const std::string op = kind_ + ".load_state";
  RPB_CHECK(s.kind == kind_, op.c_str(), "state of kind '", s.kind, "', expected '", kind_, "'");
  RPB_CHECK(s.step >= 0, op.c_str(), "negative step count ", s.step);
  std::unordered_map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < params_.size(); ++i) by_name.emplace(params_[i].name, i);

  std::vector<SlotEntry> entries;
  std::map<std::pair<std::size_t, std::size_t>, std::string> seen;  // (param, slot) -> tensor name
  for (const auto& [tname, value] : s.tensors) {
    const std::size_t slash = tname.find('/');
    RPB_CHECK(slash != std::string::npos, op.c_str(), "tensor '", tname, "' is not named <slot>/<parameter>");
    const std::string prefix = tname.substr(0, slash), pname = tname.substr(slash + 1);
    std::size_t slot = specs.size();
    for (std::size_t k = 0; k < specs.size(); ++k)
      if (specs[k].prefix == prefix) slot = k;
    if (slot == specs.size()) {
      std::string known;
      for (const SlotSpec& sp : specs) known += (known.empty() ? "" : ", ") + sp.prefix;
      RPB_FAIL(op.c_str(), "tensor '", tname, "' has unknown slot '", prefix, "' (", kind_, " keeps: ", known, ")");
    }
    const auto it = by_name.find(pname);
    RPB_CHECK(it != by_name.end(), op.c_str(), "tensor '", tname, "' names no parameter of this optimizer ('",
              pname, "')");
    const Tensor& p = params_[it->second].param;
    RPB_CHECK(value.defined(), op.c_str(), "tensor '", tname, "' is undefined");
    const Shape want_shape = specs[slot].count ? Shape{} : p.shape();
    const DType want_dtype = specs[slot].count ? DType::i64 : p.dtype();
    RPB_CHECK(value.shape() == want_shape && value.dtype() == want_dtype, op.c_str(), "tensor '", tname,
              "': expected shape ", want_shape, " ", dtype_name(want_dtype), ", found ", value.shape(), " ",
              dtype_name(value.dtype()));
    const auto [prev, fresh] = seen.emplace(std::make_pair(it->second, slot), tname);
    RPB_CHECK(fresh, op.c_str(), "tensor '", tname, "' appears twice");
    // A state slot lives where its parameter does (a checkpoint's tensors are read on the host); counts stay there.
    entries.push_back({slot, it->second, specs[slot].count ? value : value.to(p.device())});
  }
  for (const auto& [key, tname] : seen)
    for (std::size_t k = 0; k < specs.size(); ++k)
      RPB_CHECK(seen.count({key.first, k}) == 1, op.c_str(), "state has '", tname, "' but no '", specs[k].prefix,
                "/", params_[key.first].name, "'");
  return entries;
}

OptimizerState Optimizer::base_state() const {
  OptimizerState s;
  s.kind = kind_;
  s.step = steps_;
  s.groups = describe_groups();
  s.scalars.emplace_back("lr", last_lr_);
  return s;
}

void Optimizer::load_base_state(const OptimizerState& s) {
  steps_ = s.step;
  last_lr_ = 0.0;
  for (const auto& [key, v] : s.scalars)
    if (key == "lr") last_lr_ = v;
}

}  // namespace rpb::optim
