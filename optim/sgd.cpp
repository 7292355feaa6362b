#include "optim/sgd.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda/plan.h"
#include "core/dispatch.h"

namespace rpb::optim {

SGD::SGD(const nn::NamedTensors& params, SGDOptions options)
    : Optimizer("sgd", params, options.groups, options.weight_decay),
      options_(std::move(options)),
      velocity_(params_.size()) {
  RPB_CHECK(options_.momentum >= 0 && options_.momentum < 1, "sgd", "momentum must lie in [0, 1), got ",
            options_.momentum);
}

void SGD::step(double lr) {
  check_lr(lr);
  NoGradGuard no_grad;
  const bool use_momentum = options_.momentum > 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const NamedParam& np = params_[i];
    const Tensor& p = np.param;
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor& vel = velocity_[i];
    if (use_momentum && vel.defined())
      RPB_CHECK(vel.dtype() == p.dtype() && vel.shape() == p.shape(), "sgd", "parameter '", np.name, "' is now ",
                p.shape(), " ", dtype_name(p.dtype()), " but its momentum is ", vel.shape(), " ",
                dtype_name(vel.dtype()));
    const double lr_eff = lr * np.lr_scale, wd = np.weight_decay;
    if (cuda::on_cuda("sgd", {&p, &g, &vel})) {
      const bool first = use_momentum && !vel.defined();
      if (first) vel = Tensor::empty(p.shape(), p.dtype(), Device::cuda);
      cuda::backend("sgd").sgd(p.dtype(), p.raw_mutable_data(), g.raw_data(),
                               use_momentum ? vel.raw_mutable_data() : nullptr, p.numel(),
                               {lr_eff, wd, options_.momentum, first});
      continue;
    }
    dispatch_float(p.dtype(), "sgd", [&](auto tag) {
      using T = typename decltype(tag)::type;
      ArrayMap<T> P = amap<T>(p);
      const ConstArrayMap<T> G = camap<T>(g);
      const T twd = T(wd), tlr = T(lr_eff), mom = T(options_.momentum);
      if (!use_momentum) {
        if (wd != 0) P -= tlr * (G + twd * P);
        else P -= tlr * G;
        return;
      }
      const bool first = !vel.defined();
      if (first) vel = Tensor::empty(p.shape(), p.dtype());
      ArrayMap<T> Vel = amap<T>(vel);
      if (first) {
        if (wd != 0) Vel = G + twd * P;
        else Vel = G;
      } else {
        if (wd != 0) Vel = mom * Vel + (G + twd * P);
        else Vel = mom * Vel + G;
      }
      P -= tlr * Vel;
    });
  }
  finish_step(lr);
}

OptimizerState SGD::state() const {
  OptimizerState s = base_state();
  s.scalars.emplace_back("momentum", options_.momentum);
  s.scalars.emplace_back("weight_decay", options_.weight_decay);
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (velocity_[i].defined()) s.tensors.emplace_back("momentum/" + params_[i].name, velocity_[i].clone());
  return s;
}

void SGD::load_state(const OptimizerState& s) {
  const std::vector<SlotEntry> entries = check_state(s, {{"momentum"}});
  std::vector<Tensor> loaded(params_.size());
  for (const SlotEntry& e : entries) loaded[e.param] = e.value.clone();
  velocity_ = std::move(loaded);
  load_base_state(s);
}

}  // namespace rpb::optim
