// rpb/nn/module.h: the Module base: named parameters, buffers and children.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rpb::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// A module owns parameters (trained), buffers (state that is not trained) and
/// child modules, each under a name. Names join with dots into module paths
/// ("blocks.0.attn.qkv.weight"), which are the checkpoint keys and what optimizer
/// groups match on. Register and assign in one statement, so nothing is forgotten:
///
/// @code
/// struct Affine : rpb::nn::Module {
///   rpb::Tensor scale = register_parameter("scale", rpb::Tensor::ones({3}));  // (3)
///   rpb::Tensor shift = register_parameter("shift", rpb::Tensor::zeros({3})); // (3)
/// };
/// struct Net : rpb::nn::Module {
///   std::shared_ptr<Affine> first = register_module("first", std::make_shared<Affine>());
///   std::shared_ptr<Affine> second = register_module("second", std::make_shared<Affine>());
/// };
/// Net net;
/// const auto params = net.named_parameters();
/// CHECK(params.size() == 4);
/// CHECK(params[0].first == "first.scale");
/// CHECK(params[3].first == "second.shift");
/// CHECK(net.parameter_count() == 12);
/// CHECK(params[0].second.requires_grad());
/// @endcode
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Every parameter, depth-first in registration order (a stable order).
  NamedTensors named_parameters() const;
  /// Every buffer, in the same order; persistent ones are saved in checkpoints.
  NamedTensors named_buffers(bool persistent_only = false) const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  /// Every module below this one (not itself), depth-first in registration order, each with its dotted path
  /// ("blocks.0.attn"): the order and the prefixes of named_parameters().
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  int64_t parameter_count() const;

  /// Training mode (dropout active) for this module and all below it.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Converts every parameter and buffer to `dtype` in place (the handles the
  /// module's members hold stay valid); used to gradient-check modules in float64.
  void to(DType dtype);
  /// Moves every parameter and buffer to `device` in place (the handles the module's members hold stay valid).
  void to(Device device);
  /// The device of its parameters (of its first one, as Module::to keeps them together); cpu when it has none.
  Device device() const;

  /// Drops the gradients of every parameter.
  void zero_grad();
  /// Puts the parameters of this module and of every one below it back into their allowed sets (each module's
  /// project()): the trainer applies it after every optimizer step. A no-op unless a module constrains its values.
  void project_parameters();

 protected:
  /// This module's own projection, not its children's (kerple_power clamps a and p as its reference does); none by
  /// default. Writes the parameters in place, unrecorded.
  virtual void project() {}
  /// Registers a trainable tensor (requires_grad is set) and returns it for assignment.
  Tensor register_parameter(const std::string& name, Tensor value);
  /// Registers a non-trainable tensor; persistent buffers go into checkpoints.
  Tensor register_buffer(const std::string& name, Tensor value, bool persistent = true);
  /// Registers a child module and returns it for assignment.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_name(name);
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, NamedTensors& params, NamedTensors* buffers, bool persistent_only) const;

  struct Buffer {
    std::string name;
    Tensor value;
    bool persistent;
  };
  NamedTensors params_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;

  friend class ModuleList;
};

/// An indexed list of child modules, named "0", "1", ...
class ModuleList : public Module {
 public:
  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    items_.push_back(module);
    return register_module(std::to_string(items_.size() - 1), std::move(module));
  }
  std::size_t size() const { return items_.size(); }
  template <typename M>
  M& at(std::size_t i) const {
    return dynamic_cast<M&>(*items_.at(i));
  }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

/// Named child modules added from outside (e.g. "pos" holding the scheme under its own name: "pos.t5.table").
class ModuleDict : public Module {
 public:
  template <typename M>
  std::shared_ptr<M> insert(const std::string& name, std::shared_ptr<M> module) {
    return register_module(name, std::move(module));
  }
};

}  // namespace rpb::nn
