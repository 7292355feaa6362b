// rpb/optim/sgd.h: stochastic gradient descent with momentum and weight decay.
#pragma once

#include <vector>

#include "optim/optimizer.h"

namespace rpb::optim {

struct SGDOptions {
  /// PyTorch's convention: v = momentum*v + g (v = g on a parameter's first step); p -= lr_eff*v.
  double momentum = 0.0;
  /// The default weight decay (for parameters no group rule matches): L2 term wd*p added to the gradient.
  double weight_decay = 0.0;
  /// Per-name groups; the first matching rule wins (see GroupRule).
  std::vector<GroupRule> groups = {};
};

/// torch.optim.SGD (no dampening, no Nesterov). Updates parameters in place from their
/// .grad() with lr_eff = lr * lr_scale; parameters without a gradient are skipped.
/// State slot (with momentum): "momentum/<name>".
///
/// @code
/// rpb::Tensor w = rpb::Tensor::full({1}, 3.0).requires_grad_();
/// rpb::optim::SGD opt({{"w", w}}, {.momentum = 0.5});
/// for (int step = 0; step < 100; ++step) {
///   opt.zero_grad();
///   rpb::backward(rpb::sum(w * w));  // minimum at 0
///   opt.step(0.1);
/// }
/// CHECK(std::abs(w.item()) < 1e-6);
/// CHECK(opt.steps_taken() == 100);
/// @endcode
class SGD : public Optimizer {
 public:
  SGD(const nn::NamedTensors& params, SGDOptions options = {});
  void step(double lr) override;
  OptimizerState state() const override;
  void load_state(const OptimizerState& state) override;
  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
  std::vector<Tensor> velocity_;  // per parameter; undefined until its first step with momentum
};

}  // namespace rpb::optim
