#include "optim/sgd.h"

#include "core/autograd.h"
#include "core/ops.h"

namespace rpb::optim {

SGD::SGD(std::vector<NamedParam> params, SGDOptions options)
    : params_(std::move(params)), velocity_(params_.size()), options_(options) {
  RPB_CHECK(options_.lr > 0, "sgd", "learning rate must be positive, got ", options_.lr);
  RPB_CHECK(options_.momentum >= 0 && options_.momentum < 1, "sgd", "momentum must lie in [0, 1), got ",
            options_.momentum);
  for (const NamedParam& p : params_)
    RPB_CHECK(p.param.requires_grad() && p.param.is_leaf(), "sgd", "parameter '", p.name,
              "' is not a leaf that requires grad");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].param;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (options_.weight_decay != 0) g = add(g, mul_scalar(p.detach(), options_.weight_decay));
    if (options_.momentum > 0) {
      velocity_[i] = velocity_[i].defined() ? add(mul_scalar(velocity_[i], options_.momentum), g) : g.clone();
      g = velocity_[i];
    }
    p.copy_(sub(p.detach(), mul_scalar(g, options_.lr)));
  }
}

void SGD::zero_grad() {
  for (const NamedParam& p : params_) p.param.zero_grad();
}

}  // namespace rpb::optim
